"""Worlds of ordinary sessions on a few topics, and a session stuck in a loop: one of its
chunks repeated, identical vector and all."""

from __future__ import annotations

import numpy as np
import sqlalchemy as sa
from sqlalchemy.ext.asyncio import AsyncEngine

from tests.support.world import World, direction, unit

REPEAT = """
INSERT INTO session_chunks (account_id, id, runtime_session_id, source_kind, source_id,
  chunk_index, occurred_at, role, content, content_hash, redaction_state, embedding_state,
  embedding, embedding_model, embedded_at, search_terms)
SELECT account_id, gen_random_uuid(), runtime_session_id, source_kind, gen_random_uuid(), g,
  occurred_at + g * interval '1 second', role, content, content_hash, redaction_state,
  embedding_state, embedding, embedding_model, embedded_at, search_terms
FROM session_chunks, generate_series(1, :n) AS g
WHERE runtime_session_id = :session
"""
SPREAD = 19.6  # the norm of a 384-d standard normal draw, about


def topic(t: int) -> np.ndarray:
    return np.array(unit(direction(300 + t)))


def ordinary_sessions(world: World, account: str, count: int, topics: int = 3) -> list[str]:
    """`count` sessions of 8 chunks, session s on topic s % topics: chunks of one topic are
    about 0.69 similar across sessions, of two topics about 0."""
    rng = np.random.default_rng(5)
    sessions = []
    for s in range(count):
        sid = world.session(account, f"ordinary {s}", day=s)
        sessions.append(sid)
        own = 0.5 * direction(400 + s) / SPREAD
        for i in range(8):
            noise = 0.45 * rng.standard_normal(384) / SPREAD
            world.chunk(sid, unit(topic(s % topics) + own + noise), index=i)
    return sessions


async def repeat_session(engine: AsyncEngine, session: str, copies: int) -> None:
    """Make the session's one chunk `copies` identical chunks, a second apart."""
    async with engine.begin() as conn:
        await conn.execute(sa.text("SET LOCAL statement_timeout = 0"))  # setup, not a lookup
        await conn.execute(sa.text(REPEAT), {"n": copies - 1, "session": session})
