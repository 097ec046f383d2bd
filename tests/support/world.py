"""Builders of small worlds in the import format, written through the real import path."""

from __future__ import annotations

import json
import uuid
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

import numpy as np
from sqlalchemy.ext.asyncio import AsyncEngine

from transfer.importing import import_lines

MODEL = "local:hash-384@384"
DIMS = 384
T0 = datetime(2026, 1, 1, tzinfo=UTC)


def uid() -> str:
    return str(uuid.uuid4())


def unit(v: np.ndarray) -> list[float]:
    return [float(x) for x in (v / np.linalg.norm(v)).astype(np.float32)]


def direction(seed: int, dims: int = DIMS) -> np.ndarray:
    return np.random.default_rng(seed).standard_normal(dims)


def blend(a: np.ndarray, b: np.ndarray, weight: float) -> list[float]:
    """A unit vector at a chosen angle between two directions (0 = a, 1 = b)."""
    ua, ub = a / np.linalg.norm(a), b / np.linalg.norm(b)
    return unit((1 - weight) * ua + weight * ub)


@dataclass
class World:
    lines: list[dict[str, Any]] = field(default_factory=list)

    def account(
        self,
        name: str = "acme",
        *,
        key: str | None = None,
        scopes: tuple[str, ...] = ("view_runtime_sessions",),
        features: tuple[str, ...] = ("similarSessions",),
        model: str | None = MODEL,
        enabled: bool = True,
        scope: str = "full",
        daily_cap_usd: float | None = 5.0,
    ) -> tuple[str, str]:
        account_id, key = uid(), key or f"sk-test-{name}-{uid()[:8]}"
        record: dict[str, Any] = {
            "type": "account",
            "id": account_id,
            "name": name,
            "features": list(features),
            "api_keys": [{"key": key, "scopes": list(scopes)}],
        }
        if model is not None:
            provider, rest = model.split(":", 1)
            model_name, dims = rest.rsplit("@", 1)
            record["embedding"] = {
                "enabled": enabled,
                "provider": provider,
                "model": model_name,
                "dimensions": int(dims),
                "scope": scope,
                "daily_cap_usd": daily_cap_usd,
            }
        self.lines.append(record)
        return account_id, key

    def session(
        self,
        account_id: str,
        title: str = "a session",
        *,
        day: int = 0,
        status: str = "completed",
        source_type: str = "agent",
        source_id: str | None = None,
        reference: str | None = None,
    ) -> str:
        session_id = uid()
        started = T0 + timedelta(days=day)
        self.lines.append(
            {
                "type": "session",
                "id": session_id,
                "account_id": account_id,
                "title": title,
                "source_type": source_type,
                "source_id": source_id or f"src-{session_id[:8]}",
                "reference": reference or f"ref-{session_id[:8]}",
                "status": status,
                "started_at": started.isoformat(),
                "last_activity_at": (started + timedelta(hours=1)).isoformat(),
            }
        )
        return session_id

    def chunk(
        self,
        session_id: str,
        vector: list[float] | None,
        *,
        index: int = 0,
        content: str | None = None,
        model: str | None = MODEL,
        redaction: str = "clear",
        state: str | None = None,
        kind: str = "transcript_message",
        occurred_at: datetime | None = None,
        source_id: str | None = None,
    ) -> str:
        chunk_id = uid()
        self.lines.append(
            {
                "type": "chunk",
                "id": chunk_id,
                "runtime_session_id": session_id,
                "source_kind": kind,
                "source_id": source_id or uid(),
                "chunk_index": index,
                "occurred_at": (occurred_at or T0 + timedelta(minutes=index)).isoformat(),
                "role": "assistant",
                "content": content or f"passage {index} of {session_id[:8]}",
                "redaction_state": redaction,
                "embedding_state": state,
                "embedding_model": model if vector is not None else None,
                "embedding": vector,
            }
        )
        return chunk_id

    def activity(
        self,
        session_id: str,
        ordinal: int,
        content: str,
        *,
        role: str = "user",
        kind: str = "message",
        occurred_at: datetime | None = None,
    ) -> str:
        """One replay row of a session (a runtime_session_activity record)."""
        activity_id = uid()
        self.lines.append(
            {
                "type": "activity",
                "id": activity_id,
                "runtime_session_id": session_id,
                "ordinal": ordinal,
                "occurred_at": (occurred_at or T0 + timedelta(minutes=ordinal)).isoformat(),
                "role": role,
                "kind": kind,
                "content": content,
                "api_usage_id": None,
            }
        )
        return activity_id

    def jsonl(self) -> list[str]:
        return [json.dumps(line) for line in self.lines]

    async def write(self, engine: AsyncEngine) -> None:
        async with engine.begin() as conn:
            await import_lines(conn, "world.jsonl", self.jsonl())
        self.lines.clear()


async def pair_world(engine: AsyncEngine) -> tuple[str, str]:
    """One account, a viewed session and one similar session: (viewed session id, key)."""
    world = World()
    account, key = world.account()
    viewed, other = world.session(account), world.session(account)
    world.chunk(viewed, blend(direction(1), direction(2), 0.2))
    world.chunk(other, blend(direction(1), direction(3), 0.2))
    await world.write(engine)
    return viewed, key
