"""The live receiver's statements (transfer/live.py): spans stored once each, the sessions
they belong to locked in one order, their turns written where they changed, the indexer woken
at commit, and running sessions gone idle completed. Every statement is scoped to one
account."""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any
from uuid import UUID

import sqlalchemy as sa
from sqlalchemy.dialects.postgresql import ARRAY, aggregate_order_by, insert
from sqlalchemy.ext.asyncio import AsyncConnection

from data import tables as t

# The channel the receiver notifies at commit, with the account id; `index --watch` listens.
CHANNEL = "similar_sessions_changes"
_ROWS_PER_INSERT = 500  # spans per INSERT: 15 columns each, well under the 32,767 parameters


@dataclass(frozen=True, slots=True)
class StoredSpan:
    """A stored span as the mapping reads it back."""

    trace_id: str
    span_id: str
    parent_span_id: str
    name: str
    operation: str
    start_ns: int
    end_ns: int
    failed: bool
    service: str
    conversation: str | None
    session_key: str
    turns: bytes | None


@dataclass(frozen=True, slots=True)
class StoredTurn:
    ordinal: int
    occurred_at: datetime
    digest: bytes  # md5 of role, kind and content, as turn_digest() makes it


_SPAN_COLUMNS = [getattr(t.otlp_spans.c, f) for f in StoredSpan.__slots__]


def turn_digest(role: str, kind: str, content: str) -> bytes:
    """What stored_turns' digest is of a turn: md5 of its role, kind and content."""
    return hashlib.md5(f"{role}\x1f{kind}\x1f{content}".encode(), usedforsecurity=False).digest()


async def lock_traces(conn: AsyncConnection, account_id: UUID, trace_ids: Sequence[str]) -> None:
    """The traces held for this transaction, in one order: two requests with spans of one
    trace (a root naming its conversation, a child naming none) put them in one session."""
    keys = sorted({f"{account_id}:{trace}" for trace in trace_ids})
    ordered = sa.select(sa.func.unnest(sa.cast(keys, ARRAY(sa.Text))).label("k")).order_by("k")
    held = ordered.subquery()
    await conn.execute(
        sa.select(sa.func.pg_advisory_xact_lock(sa.func.hashtextextended(held.c.k, 0)))
    )


def is_conflict(exc: BaseException) -> bool:
    """A transaction the server rolled back to resolve a conflict (deadlock, serialization):
    done again, it goes through."""
    code = getattr(getattr(exc, "orig", None), "sqlstate", None)
    return isinstance(code, str) and code.startswith("40")


async def known_conversations(
    conn: AsyncConnection, account_id: UUID, trace_ids: Sequence[str]
) -> dict[str, str]:
    """The conversation each trace's stored spans named first (traces with none left out)."""
    if not trace_ids:
        return {}
    s = t.otlp_spans.c
    first = sa.func.array_agg(aggregate_order_by(s.conversation, s.start_ns, s.span_id))[1]
    rows = await conn.execute(
        sa.select(s.trace_id, first.label("conversation"))
        .where(
            s.account_id == account_id,
            s.trace_id.in_(list(set(trace_ids))),
            s.conversation.is_not(None),
        )
        .group_by(s.trace_id)
    )
    return {row.trace_id: row.conversation for row in rows}


async def strays(
    conn: AsyncConnection, account_id: UUID, keys: Mapping[str, str]
) -> dict[str, set[UUID]]:
    """For each trace given with the conversation it now belongs to, the sessions its stored
    spans without a conversation of their own were put in elsewhere (before a span of the
    trace named it)."""
    if not keys:
        return {}
    s = t.otlp_spans.c
    pairs = sa.select(
        sa.func.unnest(sa.cast(list(keys), ARRAY(sa.Text))).label("trace_id"),
        sa.func.unnest(sa.cast(list(keys.values()), ARRAY(sa.Text))).label("key"),
    ).subquery()
    rows = await conn.execute(
        sa.select(s.trace_id, s.runtime_session_id)
        .distinct()
        .join(pairs, pairs.c.trace_id == s.trace_id)
        .where(s.account_id == account_id, s.conversation.is_(None), s.session_key != pairs.c.key)
    )
    found: dict[str, set[UUID]] = {}
    for row in rows:
        found.setdefault(row.trace_id, set()).add(row.runtime_session_id)
    return found


async def lock_sessions(
    conn: AsyncConnection, account_id: UUID, sessions: Mapping[UUID, str], now: datetime
) -> None:
    """Each session (id: its conversation) made if new, as a running session with no turns
    yet (seen by others only once the transaction commits with its turns), then locked for
    this transaction, in the order of their ids: two requests never wait on each other."""
    ids = sorted(sessions)
    if not ids:
        return
    rows = [
        {
            "account_id": account_id,
            "id": sid,
            "title": sessions[sid][:2000],
            "source_type": "otlp",
            "source_id": sessions[sid][:500],
            "reference": "",
            "status": "running",
            "started_at": now,
            "last_activity_at": now,
        }
        for sid in ids
    ]
    await conn.execute(insert(t.runtime_sessions).values(rows).on_conflict_do_nothing())
    r = t.runtime_sessions.c
    await conn.execute(
        sa.select(r.id)
        .where(r.account_id == account_id, r.id.in_(ids))
        .order_by(r.id)
        .with_for_update(key_share=True)
    )


async def move_strays(
    conn: AsyncConnection, account_id: UUID, trace_id: str, key: str, session_id: UUID
) -> None:
    """The trace's stored spans without a conversation of their own put in its conversation."""
    s = t.otlp_spans.c
    await conn.execute(
        sa.update(t.otlp_spans)
        .where(
            s.account_id == account_id,
            s.trace_id == trace_id,
            s.conversation.is_(None),
            s.session_key != key,
        )
        .values(session_key=key, runtime_session_id=session_id)
    )


async def insert_spans(conn: AsyncConnection, rows: Sequence[dict[str, Any]]) -> None:
    """The spans stored (one already stored, the same account, trace and span, is left)."""
    if rows:
        await conn.execute(insert(t.otlp_spans).on_conflict_do_nothing(), list(rows))


async def session_spans(
    conn: AsyncConnection, account_id: UUID, session_ids: Sequence[UUID]
) -> dict[UUID, list[StoredSpan]]:
    """The sessions' stored spans, by session."""
    s = t.otlp_spans.c
    rows = await conn.execute(
        sa.select(s.runtime_session_id, *_SPAN_COLUMNS).where(
            s.account_id == account_id, s.runtime_session_id.in_(list(session_ids))
        )
    )
    found: dict[UUID, list[StoredSpan]] = {}
    for sid, *span in rows:
        found.setdefault(sid, []).append(StoredSpan(*span))
    return found


async def stored_turns(
    conn: AsyncConnection, account_id: UUID, session_ids: Sequence[UUID]
) -> dict[UUID, list[StoredTurn]]:
    """The sessions' replays as stored: each turn's ordinal, time and digest, in order."""
    a = t.runtime_session_activity.c
    digest = sa.func.decode(
        sa.func.md5(sa.func.convert_to(a.role + "\x1f" + a.kind + "\x1f" + a.content, "UTF8")),
        "hex",
    )
    rows = await conn.execute(
        sa.select(a.runtime_session_id, a.ordinal, a.occurred_at, digest)
        .where(a.account_id == account_id, a.runtime_session_id.in_(list(session_ids)))
        .order_by(a.runtime_session_id, a.ordinal)
    )
    found: dict[UUID, list[StoredTurn]] = {}
    for sid, *turn in rows:
        found.setdefault(sid, []).append(StoredTurn(*turn))
    return found


async def write_sessions(conn: AsyncConnection, rows: Sequence[dict[str, Any]]) -> None:
    """Each session's row as made again (the rows exist: lock_sessions made them)."""
    if not rows:
        return
    r = t.runtime_sessions.c
    names = [k for k in rows[0] if k not in ("account_id", "id")]
    stmt = (
        sa.update(t.runtime_sessions)
        .where(r.account_id == sa.bindparam("b_account_id"), r.id == sa.bindparam("b_id"))
        .values({name: sa.bindparam(f"b_{name}") for name in names})
    )
    await conn.execute(stmt, [{f"b_{k}": v for k, v in row.items()} for row in rows])


async def write_turns(conn: AsyncConnection, rows: Sequence[dict[str, Any]]) -> None:
    """Turns written by id, new or in place of what their ordinal held."""
    if not rows:
        return
    stmt = insert(t.runtime_session_activity)
    changed = ("ordinal", "occurred_at", "role", "kind", "content")
    await conn.execute(
        stmt.on_conflict_do_update(
            index_elements=["account_id", "id"],
            set_={name: stmt.excluded[name] for name in changed},
        ),
        list(rows),
    )


async def drop_turns_from(conn: AsyncConnection, account_id: UUID, cut: Mapping[UUID, int]) -> None:
    """Each session's turns from its ordinal on deleted."""
    a = t.runtime_session_activity.c
    for session_id, ordinal in cut.items():
        await conn.execute(
            sa.delete(t.runtime_session_activity).where(
                a.account_id == account_id,
                a.runtime_session_id == session_id,
                a.ordinal >= ordinal,
            )
        )


async def mark_changed(
    conn: AsyncConnection, account_id: UUID, changed: Mapping[UUID, int]
) -> None:
    """Each session's turns changed from its ordinal on (the earliest such ordinal kept)."""
    if not changed:
        return
    stmt = insert(t.session_changes)
    await conn.execute(
        stmt.on_conflict_do_update(
            index_elements=["account_id", "runtime_session_id"],
            set_={
                "from_ordinal": sa.func.least(
                    t.session_changes.c.from_ordinal, stmt.excluded.from_ordinal
                ),
                "changed_at": sa.func.now(),
            },
        ),
        [
            {"account_id": account_id, "runtime_session_id": sid, "from_ordinal": ordinal}
            for sid, ordinal in changed.items()
        ],
    )


async def delete_session(conn: AsyncConnection, account_id: UUID, session_id: UUID) -> None:
    """A session left with no span (its spans went to the conversation their trace named):
    its chunks, its chunking, its changes, its turns and itself."""
    for table in (
        t.session_chunks,
        t.session_chunking,
        t.session_changes,
        t.runtime_session_activity,
    ):
        await conn.execute(
            sa.delete(table).where(
                table.c.account_id == account_id, table.c.runtime_session_id == session_id
            )
        )
    r = t.runtime_sessions.c
    await conn.execute(
        sa.delete(t.runtime_sessions).where(r.account_id == account_id, r.id == session_id)
    )


async def notify(conn: AsyncConnection, account_id: UUID) -> None:
    """Wake the listening indexers when this transaction commits (not before, not if not)."""
    await conn.execute(sa.select(sa.func.pg_notify(CHANNEL, str(account_id))))


async def complete_idle(conn: AsyncConnection, idle_s: int) -> list[UUID]:
    """Running live sessions with no span for idle_s seconds marked `completed`; the account
    of each."""
    r = t.runtime_sessions.c
    rows = await conn.execute(
        sa.update(t.runtime_sessions)
        .where(
            r.status == "running",
            r.source_type == "otlp",
            r.last_activity_at < sa.func.now() - sa.func.make_interval(0, 0, 0, 0, 0, 0, idle_s),
        )
        .values(status="completed")
        .returning(r.account_id)
    )
    return list(rows.scalars())
