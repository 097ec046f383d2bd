"""The per-request context: the process's services, the caller, the cursor codec, the
request's budgets (comparisons, replay content) and fresh DataLoaders."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from uuid import UUID

from sqlalchemy.ext.asyncio import AsyncEngine
from strawberry.dataloader import DataLoader

from config.settings import default_of
from data.accounts import Principal
from data.model_catalog import ModelCatalog
from data.sessions import ReplayPageKey, ReplayTurn, SessionRow
from indexer.embedders import Registry
from resolvers import loaders
from resolvers.arguments import SimilarArgs
from resolvers.check_costs import CheckCosts
from resolvers.cursors import Cursors
from resolvers.errors import LimitExceeded
from resolvers.results import SimilarResult
from resolvers.timeline import TimelineKey, TimelineResult
from resolvers.tuning import Tuning

MAX_SIMILAR_PER_REQUEST = 50


class RequestBudget:
    """The comparisons one request may run, decided once, before any runs, by a plan that
    grants whole fields (schema/budget.py) within the limit."""

    def __init__(self, limit: int = MAX_SIMILAR_PER_REQUEST) -> None:
        self.limit = limit
        self.granted: frozenset[tuple[str, ...]] | None = None

    def admit(
        self, path: tuple[str, ...], plan: Callable[[int], frozenset[tuple[str, ...]]]
    ) -> None:
        """Raise LimitExceeded unless the field at `path` was granted by the plan."""
        if self.granted is None:
            self.granted = plan(self.limit)
        if path not in self.granted:
            raise LimitExceeded("similarSessions comparisons", self.limit)


class ContentBudget:
    """The characters of replay content one request may read, and may return, across every
    alias and session it asks for; a turn past the budget is cut (its `contentTruncated`
    says so). A page read once and shown by many aliases is read once, returned by each."""

    def __init__(self, limit: int = default_of("replay_content_chars")) -> None:
        self.limit, self.left, self.unread = limit, limit, limit

    def take(self, content: str) -> str:
        """The part of `content` the budget still allows returned, charged to it."""
        shown = content[: self.left]
        self.left -= len(shown)
        return shown

    def read(self, chars: int) -> None:
        """Charge what a statement read (it read at most `unread`)."""
        self.unread = max(0, self.unread - chars)


@dataclass(frozen=True)
class Services:
    """What every request of a process shares: the engines, the tuning, the catalog of
    models in use, what exact checks cost per account, and the embedders of search texts."""

    engine: AsyncEngine
    tuning: Tuning
    comparisons: AsyncEngine | None = None  # the comparisons' own pool; else `engine`
    models: ModelCatalog = field(default_factory=ModelCatalog)
    embedders: Registry = field(default_factory=Registry)
    checks: CheckCosts = field(default_factory=CheckCosts)

    @property
    def comparison_engine(self) -> AsyncEngine:
        return self.comparisons or self.engine


@dataclass(frozen=True)
class Context:
    """Built once per request; its DataLoaders never outlive it."""

    services: Services
    principal: Principal
    cursors: Cursors
    sessions: DataLoader[UUID, SessionRow | None] = field(init=False)
    replays: DataLoader[ReplayPageKey, list[ReplayTurn]] = field(init=False)
    similar: DataLoader[tuple[UUID, SimilarArgs], SimilarResult | None] = field(init=False)
    timelines: DataLoader[TimelineKey, TimelineResult | None] = field(init=False)
    budget: RequestBudget = field(default_factory=RequestBudget)
    content: ContentBudget = field(default_factory=ContentBudget)

    def __post_init__(self) -> None:
        account, services = self.principal.account_id, self.services
        built = {
            "sessions": loaders.session_loader(services.engine, account),
            "replays": loaders.replay_loader(services.engine, account, self.content),
            "similar": loaders.similar_loader(services, account),
            "timelines": loaders.timeline_loader(services, account),
        }
        for name, loader in built.items():
            object.__setattr__(self, name, loader)
