"""Live ingest: spans an agent exports (POST /v1/traces) become sessions, by the mapping the
file import uses (transfer/formats/spans.py), in two steps.

1. `accept`: the receiver stores the export request as it was sent and wakes the indexers, in
   one transaction; it answers 200 once that has committed, so an acknowledged span is
   durable, and the answer costs one insert whatever the sessions it touches hold.
2. `make_sessions`: the indexer (`index --watch`, woken at that commit) takes the account's
   requests, oldest first, a few at a time, and in one transaction with their deletion:
   a. puts each span in its conversation (a trace's spans without one follow the one a span
      of the trace names, in these requests or stored before; a trace that names one late
      takes its earlier spans from the session they were put in);
   b. locks the sessions touched in the order of their ids (made first if new);
   c. stores the spans; a span already stored (the same account, trace and span: an
      exporter's retry) is dropped, and requests of nothing new change nothing;
   d. makes each session with new spans again from all its spans: its turns in time order, a
      re-sent conversation replayed once, its status and times. Only the turns that changed
      are written, and the first of them is marked for the chunking that follows.
   Two indexers take different requests (the taken are locked, the others skip them) and
   meet only on a session's lock. A request that cannot be made into sessions is kept with
   the reason (`otlp_batches.failure`), never dropped."""

from __future__ import annotations

import zlib
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any
from uuid import UUID

import orjson
import structlog
from sqlalchemy.exc import DBAPIError
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine

from data import ingest as sql
from data import otlp_batches as batches
from data.errors import Unavailable
from observability import metrics
from transfer.formats.conversation import Turn
from transfer.formats.genai import SpanTurn
from transfer.formats.otlp_wire import decode
from transfer.formats.replay import records_of
from transfer.formats.spans import (
    SpanFacts,
    key_of,
    replayed,
    session_id,
    session_of,
    trace_keys,
)
from transfer.import_format import ActivityRecord, SessionRecord

CONFLICT_TRIES = 3
# requests made into sessions per transaction: a session they share is made again once
BATCHES_PER_TRANSACTION = 16
log = structlog.get_logger(__name__)


@dataclass
class Ingested:
    """What was changed: spans stored, spans already stored, sessions made again."""

    stored: int
    repeated: int
    sessions: list[UUID]

    def plus(self, other: Ingested) -> Ingested:
        return Ingested(
            self.stored + other.stored,
            self.repeated + other.repeated,
            [*self.sessions, *other.sessions],
        )

    def counts(self) -> dict[str, int]:
        return {"stored": self.stored, "repeated": self.repeated, "sessions": len(self.sessions)}


async def accept(
    engine: AsyncEngine, account_id: UUID, encoding: str, gzipped: bool, body: bytes
) -> None:
    """The export request stored as it was sent, the indexers woken at commit (step 1)."""
    async with engine.begin() as conn:
        await batches.accept(conn, account_id, encoding, gzipped, body)


async def make_sessions(
    engine: AsyncEngine, idle: timedelta, account_ids: Sequence[UUID] | None = None
) -> Ingested:
    """Every request waiting (of the accounts named, or all) made into sessions (step 2)."""
    async with engine.connect() as conn:
        accounts = await batches.accounts_waiting(conn, account_ids)
    made = Ingested(0, 0, [])
    for account_id in accounts:
        try:
            while (done := await _make_some(engine, account_id, idle)) is not None:
                made = made.plus(done)
        except Unavailable:  # conflicts past the tries: the next pass takes them again
            log.warning("sessions_not_made", account_id=str(account_id), reason="conflict")
    if made.sessions:
        log.info("sessions_made", **made.counts())
    return made


async def _make_some(engine: AsyncEngine, account_id: UUID, idle: timedelta) -> Ingested | None:
    """The account's oldest requests made into sessions in one transaction with their
    deletion; None when none waits. A request that fails alone is kept with its reason."""
    try:
        return await _retried(engine, account_id, idle, BATCHES_PER_TRANSACTION)
    except _Unmakeable:
        pass  # one of them: each alone, until the one is found
    try:
        return await _retried(engine, account_id, idle, 1)
    except _Unmakeable as failed:
        async with engine.begin() as conn:
            await batches.fail(conn, account_id, failed.batch_id, failed.reason)
        metrics.INGEST_FAILED.inc()
        log.error("batch_failed", account_id=str(account_id), batch=failed.batch_id)
        return Ingested(0, 0, [])


class _Unmakeable(Exception):
    """Requests this code cannot make into sessions (not the database's refusal)."""

    def __init__(self, batch_id: int, exc: Exception) -> None:
        self.batch_id, self.reason = batch_id, f"{type(exc).__name__}: {exc}"
        super().__init__(self.reason)


async def _retried(
    engine: AsyncEngine, account_id: UUID, idle: timedelta, take: int
) -> Ingested | None:
    """One transaction of at most `take` requests, done again when the server rolled it back
    for a conflict (at most 3 times, then Unavailable: the next pass takes them again)."""
    for _ in range(CONFLICT_TRIES):
        try:
            async with engine.begin() as conn:
                taken = await batches.take(conn, account_id, take)
                if not taken:
                    return None
                try:
                    spans = [span for batch in taken for span in _spans_of(batch)]
                    done = await ingest_in(conn, account_id, spans, datetime.now(UTC), idle)
                except (DBAPIError, Unavailable):
                    raise
                except Exception as exc:
                    raise _Unmakeable(taken[0].id, exc) from exc
                await batches.drop(conn, account_id, [batch.id for batch in taken])
            _count(done, taken[0].received_at)
            return done
        except DBAPIError as exc:
            if not sql.is_conflict(exc):
                raise
    raise Unavailable("conflict")


def _count(done: Ingested, oldest: datetime) -> None:
    """The spans made and how long the oldest request waited, once their commit is done."""
    metrics.INGEST_SPANS.labels("stored").inc(done.stored)
    metrics.INGEST_SPANS.labels("repeated").inc(done.repeated)
    metrics.INGEST_LAG.observe((datetime.now(UTC) - oldest).total_seconds())


def _spans_of(batch: batches.Batch) -> list[SpanFacts]:
    """The spans of a stored request, read as the receiver read them (it checked the body:
    the same spans are read, and the same are rejected)."""
    body = zlib.decompress(batch.body, 16 + zlib.MAX_WBITS) if batch.gzipped else batch.body
    return decode(body, batch.encoding).spans


async def ingest_in(
    conn: AsyncConnection,
    account_id: UUID,
    spans: Sequence[SpanFacts],
    now: datetime,
    idle: timedelta,
) -> Ingested:
    """The spans stored and their sessions made again, in the caller's transaction (step 2's
    a-d)."""
    unique = list({(s.trace_id, s.span_id): s for s in spans}.values())
    await sql.lock_traces(conn, account_id, [s.trace_id for s in unique])
    keyless = [s.trace_id for s in unique if s.conversation is None]
    keys = trace_keys(unique, await sql.known_conversations(conn, account_id, keyless))
    named = {trace: key for trace, key in keys.items() if key != trace}
    strays = await sql.strays(conn, account_id, named)
    arriving: dict[UUID, list[SpanFacts]] = {}
    for span in unique:
        arriving.setdefault(session_id(account_id, key_of(span, keys)), []).append(span)
    moved = {session_id(account_id, named[trace]) for trace in strays}
    moved |= {sid for ids in strays.values() for sid in ids}
    conversations = {sid: key_of(group[0], keys) for sid, group in arriving.items()}
    await sql.lock_sessions(conn, account_id, {**dict.fromkeys(moved, ""), **conversations}, now)
    for trace in strays:
        key = named[trace]
        await sql.move_strays(conn, account_id, trace, key, session_id(account_id, key))
    sessions = sorted(arriving.keys() | moved)
    writes = _Writes()
    stored = await sql.session_spans(conn, account_id, sessions)
    turns = await sql.stored_turns(conn, account_id, sessions)
    for sid in sessions:
        have = stored.get(sid, [])
        known = {(s.trace_id, s.span_id) for s in have}
        fresh = [s for s in arriving.get(sid, []) if (s.trace_id, s.span_id) not in known]
        if not fresh and sid not in moved:
            continue  # every span of it was stored before: an exporter's retry
        before = [_facts_of_stored(s) for s in have]
        replay, fresh = replayed(before + fresh, fresh)  # fresh: what was sent again left out
        writes.spans += [_row(account_id, s, keys) for s in fresh]
        key = conversations.get(sid) or next((s.session_key for s in have), "")
        made = _Made(sid, key, before + fresh, replay)
        writes.made_again(account_id, made, turns.get(sid, []), (now, idle))
    await writes.run(conn, account_id)
    return Ingested(len(writes.spans), len(spans) - len(writes.spans), writes.sessions)


@dataclass(frozen=True, slots=True)
class _Made:
    """A session to make again: its id, conversation, every span and their replay."""

    id: UUID
    key: str
    spans: list[SpanFacts]
    replay: list[tuple[Turn, int]]


@dataclass
class _Writes:
    """What one request writes, gathered over its sessions and written in a few statements."""

    spans: list[dict[str, Any]] = field(default_factory=list)
    sessions: list[UUID] = field(default_factory=list)
    heads: list[dict[str, Any]] = field(default_factory=list)
    turns: list[dict[str, Any]] = field(default_factory=list)
    cut: dict[UUID, int] = field(default_factory=dict)  # turns dropped from this ordinal on
    changed: dict[UUID, int] = field(default_factory=dict)  # the first turn that changed
    emptied: list[UUID] = field(default_factory=list)

    def made_again(
        self,
        account_id: UUID,
        made: _Made,
        before: list[sql.StoredTurn],
        clock: tuple[datetime, timedelta],
    ) -> None:
        """The session made again from all its spans: its row, the turns that changed;
        emptied when it has none left."""
        sid = made.id
        self.sessions.append(sid)
        if not made.spans:
            self.emptied.append(sid)
            return
        session, timed = session_of(account_id, made.key, made.spans, *clock, made.replay)
        count, first = _first_changed(timed, before)
        records = records_of(session, timed, first)  # the turns before `first` are as stored
        head, turns = records[0], records[1:]
        assert isinstance(head, SessionRecord)
        self.heads.append(head.model_dump(exclude={"type"}))
        changed = [r for r in turns if isinstance(r, ActivityRecord) and _differs(r, before)]
        self.turns += [_turn_row(account_id, r) for r in changed]
        firsts = [r.ordinal for r in changed]
        if len(before) > count:
            self.cut[sid] = count
            firsts.append(count)
        if firsts:
            self.changed[sid] = min(firsts)

    async def run(self, conn: AsyncConnection, account_id: UUID) -> None:
        await sql.insert_spans(conn, self.spans)
        await sql.write_sessions(conn, self.heads)
        await sql.write_turns(conn, self.turns)
        await sql.drop_turns_from(conn, account_id, self.cut)
        await sql.mark_changed(conn, account_id, self.changed)
        for sid in self.emptied:
            await sql.delete_session(conn, account_id, sid)


def _row(account_id: UUID, span: SpanFacts, keys: dict[str, str]) -> dict[str, Any]:
    key = key_of(span, keys)
    return {
        "account_id": account_id,
        "trace_id": span.trace_id,
        "span_id": span.span_id,
        "parent_span_id": span.parent_span_id,
        "name": span.name[:2000],
        "operation": span.operation[:200],
        "start_ns": span.start,
        "end_ns": span.end,
        "failed": span.failed,
        "service": span.service[:2000],
        "conversation": span.conversation,
        "session_key": key,
        "runtime_session_id": session_id(account_id, key),
        "turns": _encoded(span.turns) if span.turns else None,
    }


def _encoded(turns: Sequence[SpanTurn]) -> bytes:
    return orjson.dumps([[t.role, t.kind, t.content, t.call_id, at, h] for t, at, h in turns])


def _facts_of_stored(span: sql.StoredSpan) -> SpanFacts:
    entries = orjson.loads(span.turns) if span.turns else []
    return SpanFacts(
        trace_id=span.trace_id,
        span_id=span.span_id,
        parent_span_id=span.parent_span_id,
        name=span.name,
        operation=span.operation,
        start=int(span.start_ns),
        end=int(span.end_ns),
        failed=span.failed,
        service=span.service,
        conversation=span.conversation,
        turns=tuple((Turn(r, k, c, i), at, h) for r, k, c, i, at, h in entries),
    )


def _first_changed(
    timed: Sequence[tuple[Turn, datetime]], before: list[sql.StoredTurn]
) -> tuple[int, int]:
    """How many turns the session has (those with text), and the ordinal of the first that
    differs from the one stored there (the count when none does)."""
    count, first = 0, None
    for turn, at in timed:
        if not turn.content.strip():
            continue
        if first is None and (
            count >= len(before)
            or before[count].occurred_at != at
            or before[count].digest != sql.turn_digest(turn.role[:50], turn.kind, turn.content)
        ):
            first = count
        count += 1
    return count, count if first is None else first


def _differs(record: ActivityRecord, before: list[sql.StoredTurn]) -> bool:
    if record.ordinal >= len(before):
        return True
    stored = before[record.ordinal]
    digest = sql.turn_digest(record.role, record.kind, record.content)
    return stored.digest != digest or stored.occurred_at != record.occurred_at


def _turn_row(account_id: UUID, record: ActivityRecord) -> dict[str, Any]:
    return {"account_id": account_id, **record.model_dump(exclude={"type", "api_usage_id"})}
