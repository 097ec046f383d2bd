"""The per-request context: the engine, the caller, the tuning, and fresh DataLoaders."""

from __future__ import annotations

from dataclasses import dataclass, field
from uuid import UUID

from sqlalchemy.ext.asyncio import AsyncEngine
from strawberry.dataloader import DataLoader

from data.accounts import Principal
from data.sessions import ActivityRow, SessionRow
from resolvers import loaders
from resolvers.similar import SimilarArgs, SimilarResult, Tuning


@dataclass(frozen=True)
class Context:
    """Built once per request; its DataLoaders never outlive it."""

    engine: AsyncEngine
    principal: Principal
    tuning: Tuning
    sessions: DataLoader[UUID, SessionRow | None] = field(init=False)
    replays: DataLoader[UUID, list[ActivityRow]] = field(init=False)
    similar: DataLoader[tuple[UUID, SimilarArgs], SimilarResult | None] = field(init=False)

    def __post_init__(self) -> None:
        account = self.principal.account_id
        object.__setattr__(self, "sessions", loaders.session_loader(self.engine, account))
        object.__setattr__(self, "replays", loaders.replay_loader(self.engine, account))
        object.__setattr__(
            self, "similar", loaders.similar_loader(self.engine, account, self.tuning)
        )
