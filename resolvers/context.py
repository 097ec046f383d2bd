"""The per-request context: the engine, the caller, the tuning, the cursor codec, and fresh
DataLoaders."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from uuid import UUID

from sqlalchemy.ext.asyncio import AsyncEngine
from strawberry.dataloader import DataLoader

from config.settings import default_of
from data.accounts import Principal
from data.sessions import ActivityRow, SessionRow
from resolvers import loaders
from resolvers.arguments import SimilarArgs
from resolvers.cursors import Cursors
from resolvers.errors import LimitExceeded
from resolvers.results import SimilarResult
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
    """The characters of replay content one request may return, across every alias and
    session it asks for; a turn past the budget is cut (its `contentTruncated` says so)."""

    def __init__(self, limit: int = default_of("replay_content_chars")) -> None:
        self.limit, self.left = limit, limit

    def take(self, content: str) -> str:
        """The part of `content` the budget still allows, charged to it."""
        shown = content[: self.left]
        self.left -= len(shown)
        return shown


@dataclass(frozen=True)
class Context:
    """Built once per request; its DataLoaders never outlive it."""

    engine: AsyncEngine
    principal: Principal
    tuning: Tuning
    cursors: Cursors
    sessions: DataLoader[UUID, SessionRow | None] = field(init=False)
    replays: DataLoader[UUID, list[ActivityRow]] = field(init=False)
    similar: DataLoader[tuple[UUID, SimilarArgs], SimilarResult | None] = field(init=False)
    budget: RequestBudget = field(default_factory=RequestBudget)
    content: ContentBudget = field(default_factory=ContentBudget)

    def __post_init__(self) -> None:
        account = self.principal.account_id
        object.__setattr__(self, "sessions", loaders.session_loader(self.engine, account))
        object.__setattr__(self, "replays", loaders.replay_loader(self.engine, account))
        object.__setattr__(
            self, "similar", loaders.similar_loader(self.engine, account, self.tuning)
        )
