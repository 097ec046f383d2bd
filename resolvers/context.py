"""The per-request context: the engine, the caller, the tuning, and fresh DataLoaders."""

from __future__ import annotations

from dataclasses import dataclass, field
from uuid import UUID

from sqlalchemy.ext.asyncio import AsyncEngine
from strawberry.dataloader import DataLoader

from data.accounts import Principal
from data.model_catalog import ModelCatalog
from data.sessions import ActivityRow, ReplayPageKey, SessionRow
from indexer.embedders import Registry
from resolvers import loaders
from resolvers.arguments import SimilarArgs
from resolvers.errors import LimitExceeded
from resolvers.results import SimilarResult
from resolvers.timeline import TimelineKey, TimelineResult
from resolvers.tuning import Tuning

MAX_SIMILAR_PER_REQUEST = 50


class RequestBudget:
    """Counts the comparisons one request asks for, across every batch it runs."""

    def __init__(self, limit: int = MAX_SIMILAR_PER_REQUEST) -> None:
        self.limit, self.used = limit, 0

    def spend(self) -> None:
        self.used += 1
        if self.used > self.limit:
            raise LimitExceeded("similarSessions comparisons", self.limit)


@dataclass(frozen=True)
class Services:
    """What every request of a process shares: the engines, the tuning, the catalog of
    models in use, and the embedders of search texts."""

    engine: AsyncEngine
    tuning: Tuning
    comparisons: AsyncEngine | None = None  # the comparisons' own pool; else `engine`
    models: ModelCatalog = field(default_factory=ModelCatalog)
    embedders: Registry = field(default_factory=Registry)

    @property
    def comparison_engine(self) -> AsyncEngine:
        return self.comparisons or self.engine


@dataclass(frozen=True)
class Context:
    """Built once per request; its DataLoaders never outlive it."""

    services: Services
    principal: Principal
    sessions: DataLoader[UUID, SessionRow | None] = field(init=False)
    replays: DataLoader[ReplayPageKey, list[ActivityRow]] = field(init=False)
    similar: DataLoader[tuple[UUID, SimilarArgs], SimilarResult | None] = field(init=False)
    timelines: DataLoader[TimelineKey, TimelineResult | None] = field(init=False)
    budget: RequestBudget = field(default_factory=RequestBudget)

    def __post_init__(self) -> None:
        account, services = self.principal.account_id, self.services
        built = {
            "sessions": loaders.session_loader(services.engine, account),
            "replays": loaders.replay_loader(services.engine, account),
            "similar": loaders.similar_loader(services, account),
            "timelines": loaders.timeline_loader(services, account),
        }
        for name, loader in built.items():
            object.__setattr__(self, name, loader)
