"""The comparison's first statement (the setting, the asked sessions, their inventories,
probes, lookup paths and every probe's nearest chunks) and the settings it runs under."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator, Sequence
from contextlib import asynccontextmanager, contextmanager
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, NamedTuple
from uuid import UUID

import sqlalchemy as sa
from sqlalchemy.exc import DBAPIError
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine

from data.accounts import EmbeddingSetting, setting_of
from data.comparison_sql import ANSWER, TIMELINE_ANSWER, first_statement, search_statement
from data.engine import (
    ComparisonSettings,
    is_out_of_resources,
    is_query_canceled,
    json_statement,
)
from data.errors import ComparisonTimedOut
from data.model_identity import ModelIdentity
from data.sessions import SessionRow


class HitRow(NamedTuple):
    """One row a lookup kept (a tuple: a page's first statement returns thousands)."""

    key: int
    probe: int
    chunk_id: UUID
    session_id: UUID
    similarity: float


@dataclass(frozen=True, slots=True)
class ScanWindow:
    """What one approximate lookup's over-fetched window looked like: the candidates the scan
    returned and the farthest of them (cosine distance), the nearest and the last of the rows
    it kept, the largest group of those at one distance, and how many of them are hits. The
    distances are None when the scan returned no finite one."""

    scanned: int
    farthest: float | None
    nearest: float | None
    last: float | None
    tied: int
    hits: int


@dataclass(frozen=True, slots=True)
class Ask:
    """One comparison of the batch: its session, window and neighbour filters."""

    key: int
    session_id: UUID
    cutoff: datetime | None = None
    statuses: tuple[str, ...] | None = None
    source_types: tuple[str, ...] | None = None

    @property
    def filtered(self) -> bool:
        return self.statuses is not None or self.source_types is not None

    def as_json(self) -> dict[str, Any]:
        return {
            "key": self.key,
            "session_id": str(self.session_id),
            "cutoff": None if self.cutoff is None else self.cutoff.isoformat(),
            "statuses": None if self.statuses is None else list(self.statuses),
            "source_types": None if self.source_types is None else list(self.source_types),
        }


@dataclass(frozen=True, slots=True)
class Limits:
    per_probe: int
    floor: float
    overfetch: int
    exact_scan_max_chunks: int
    own_index: bool = True  # False: the shared index even where the account has its own

    @property
    def window(self) -> int:
        """Candidates an approximate lookup reads before its exact re-rank (never fewer
        than it keeps)."""
        return max(self.overfetch, self.per_probe)


@dataclass
class Looked:
    """What the first statement found, by the asks' keys."""

    setting: EmbeddingSetting | None = None
    sessions: dict[int, SessionRow] = field(default_factory=dict)
    embedded: dict[int, dict[str, int]] = field(default_factory=dict)  # model -> chunks
    pending: dict[int, int] = field(default_factory=dict)
    models: dict[int, tuple[str, int]] = field(default_factory=dict)  # comparison model, chunks
    probes: dict[int, list[UUID]] = field(default_factory=dict)  # in probe order
    # (key, probe) -> the probe whose lookup answered it, where that is another (same vector)
    shared: dict[tuple[int, int], int] = field(default_factory=dict)
    paths: dict[str, tuple[str, int]] = field(default_factory=dict)  # model -> path, comparable
    hits: list[HitRow] = field(default_factory=list)
    windows: dict[tuple[int, int], ScanWindow] = field(default_factory=dict)  # approximate
    buckets: dict[int, list[tuple[datetime, int]]] = field(default_factory=dict)  # timeline
    bounded: set[int] = field(default_factory=set)  # keys with a probe that reached its bound
    found: set[int] = field(default_factory=set)  # the keys whose session exists (timeline)


async def look_up(
    conn: AsyncConnection,
    account_id: UUID,
    asks: Sequence[Ask],
    models: Sequence[ModelIdentity],
    limits: Limits,
    retry: Sequence[tuple[int, int]] | None = None,
    timeline: tuple[str, dict[str, float]] | None = None,
    exact: bool = False,
) -> Looked:
    """The comparison's first statement, for every ask at once; with `retry`, only those
    (key, probe) pairs are looked up (and reported as probes); with `timeline` (a bucket:
    day, week or month, and each model's related cut point) the answer is each comparison's
    sessions at or above that cut point, counted by that bucket; with `exact`, every lookup
    takes the exact path."""
    answer = ANSWER if timeline is None else TIMELINE_ANSWER
    filtered = any(a.filtered for a in asks)
    statement = first_statement(models, account_id, filtered, answer, pooled=not exact)
    rows = await conn.execute(
        json_statement(statement, "payload"),
        {
            "account_id": account_id,
            "asks": json.dumps([a.as_json() for a in asks]),
            "branch_models": [str(m) for m in models],
            "retry": None if retry is None else [f"{key}:{probe}" for key, probe in retry],
            **_limit_params(limits, exact),
            **({} if timeline is None else _timeline_params(*timeline)),
        },
    )
    looked = Looked()
    probes: dict[int, dict[int, UUID]] = {}
    for row in rows.all():
        kind, key, number, chunk_id = row[:4]
        if kind == "hits":
            _take_hits(looked, row)
        elif kind == "probe":
            probes.setdefault(key, {})[number] = chunk_id
        elif kind == "window":
            looked.windows[key, number] = ScanWindow(*row.payload)
        else:
            _take(looked, kind, key, number, row.payload)
    looked.probes = {key: [by[n] for n in sorted(by)] for key, by in probes.items()}
    return looked


async def look_up_text(
    conn: AsyncConnection,
    account_id: UUID,
    identity: ModelIdentity,
    vector: str,
    ask: Ask,
    limits: Limits,
    exact: bool = False,
) -> Looked:
    """A search text's vector as the one probe (key 0, probe 0) of the account's chunks of
    the model: same paths and candidates as a comparison's probes, no own session; with
    `exact`, on the exact path."""
    rows = await conn.execute(
        json_statement(search_statement(identity, account_id, ask.filtered), "payload"),
        {
            "account_id": account_id,
            "vector": vector,
            "cutoff": ask.cutoff,
            "statuses": None if ask.statuses is None else list(ask.statuses),
            "source_types": None if ask.source_types is None else list(ask.source_types),
            **_limit_params(limits, exact),
        },
    )
    looked = Looked()
    for row in rows:
        kind, key, number = row[:3]
        if kind == "hits":
            _take_hits(looked, row)
        elif kind == "window":
            looked.windows[key, number] = ScanWindow(*row.payload)
        else:
            looked.paths[str(identity)] = (row.payload, number)
    return looked


def _take_hits(looked: Looked, row: Any) -> None:
    """One lookup's hits, given as three aligned arrays."""
    key, probe = row.key, row.probe
    looked.hits.extend(
        HitRow(key, probe, chunk_id, session_id, similarity)
        for chunk_id, session_id, similarity in zip(
            row.chunk_ids, row.session_ids, row.similarities, strict=True
        )
    )


def _limit_params(limits: Limits, exact: bool) -> dict[str, Any]:
    """The lookups' bounds and path, as both statements take them."""
    return {
        "exact": exact,
        "cap": limits.exact_scan_max_chunks,
        "own_index": limits.own_index,
        "per_probe": limits.per_probe,
        "floor": limits.floor,
        "overfetch": limits.window,
    }


def _timeline_params(bucket: str, related: dict[str, float]) -> dict[str, str]:
    return {"bucket": bucket, "related": json.dumps(related)}


def _take(looked: Looked, kind: str, key: int, number: int, payload: Any) -> None:
    if kind == "setting":
        looked.setting = setting_of(_Row(payload))
    elif kind == "session" and payload is None:
        looked.found.add(key)
    elif kind == "session":
        looked.sessions[key] = session_of(payload)
    elif kind == "embedded":
        looked.embedded.setdefault(key, {})[payload] = number
    elif kind == "pending":
        looked.pending[key] = number
    elif kind == "shared":
        looked.shared[key, number] = payload
    elif kind == "chosen":
        looked.models[key] = (payload, number)
    elif kind == "path":
        model, path = payload
        looked.paths[model] = (path, number)
    elif kind == "bucket":
        looked.buckets.setdefault(key, []).append((datetime.fromisoformat(payload), number))
    elif kind == "bounded":
        looked.bounded.add(key)


class _Row:
    """Attribute access over a JSON object (setting_of reads a row's attributes)."""

    def __init__(self, values: dict[str, Any]) -> None:
        self.__dict__.update(values)


def session_of(values: dict[str, Any]) -> SessionRow:
    return SessionRow(
        id=UUID(values["id"]),
        title=values["title"],
        source_type=values["source_type"],
        source_id=values["source_id"],
        reference=values["reference"],
        status=values["status"],
        started_at=datetime.fromisoformat(values["started_at"]),
        last_activity_at=datetime.fromisoformat(values["last_activity_at"]),
    )


@contextmanager
def within_budget() -> Iterator[None]:
    """Statements cancelled by the comparison's time budget raise ComparisonTimedOut (their
    transaction is then aborted)."""
    try:
        yield
    except DBAPIError as exc:
        if is_query_canceled(exc):
            raise ComparisonTimedOut from None
        raise


async def within_own_budget(
    conn: AsyncConnection, budget_ms: int, run: Callable[[], Awaitable[Looked]]
) -> Looked | None:
    """Run lookups in a savepoint under their own time budget; None when they ran past it,
    or the server lacked the resources for them (an exact pass spilling past
    `temp_file_limit`, say), or the budget is 0 (they do not run). The savepoint is rolled
    back either way (lookups only read), which also gives the comparison's transaction its
    own budget back, usable after a cancelled statement."""
    if budget_ms <= 0:
        return None
    await in_transaction(conn)
    savepoint = await conn.begin_nested()
    try:
        await conn.execute(
            sa.text("SELECT set_config('statement_timeout', :ms, true)"), {"ms": str(budget_ms)}
        )
        return await run()
    except DBAPIError as exc:
        if not (is_query_canceled(exc) or is_out_of_resources(exc)):
            raise
        return None
    finally:
        await savepoint.rollback()


async def ensure_configured(conn: AsyncConnection, settings: ComparisonSettings) -> None:
    """A connection opened for comparisons already has their settings: no statement then."""
    if conn.info.get("comparison") != settings:
        await configure_comparison(conn, settings)


async def configure_comparison(conn: AsyncConnection, settings: ComparisonSettings) -> None:
    """Set the comparison's settings until its transaction ends, in one round trip (on a
    connection not opened with them). On Citus these become SET LOCAL statements
    (docs/scaling.md)."""
    await in_transaction(conn)
    values = list(settings.server_settings().items())
    calls = ", ".join(f"set_config('{name}', :v{n}, true)" for n, (name, _) in enumerate(values))
    await conn.execute(sa.text(f"SELECT {calls}"), {f"v{n}": v for n, (_, v) in enumerate(values)})


@asynccontextmanager
async def reading(engine: AsyncEngine) -> AsyncIterator[AsyncConnection]:
    """A connection for comparisons, in autocommit: their two statements go to the server
    without a BEGIN before them and a ROLLBACK after (two round trips, not four). A step
    that needs a transaction begins one (in_transaction); the pool resets the connection
    when it comes back."""
    async with engine.connect() as conn:
        yield await conn.execution_options(isolation_level="AUTOCOMMIT")


async def in_transaction(conn: AsyncConnection) -> None:
    """Make the connection's next statement begin a transaction if it runs in autocommit
    (`reading`): for a setting that must last into the statement after it, or a savepoint.
    Nothing was begun at the server, so ending SQLAlchemy's own transaction sends nothing."""
    options = conn.sync_connection.get_execution_options() if conn.sync_connection else {}
    if options.get("isolation_level") == "AUTOCOMMIT":
        await conn.commit()
        await conn.execution_options(isolation_level="READ COMMITTED")


async def widen_search(conn: AsyncConnection, ef_search: int) -> None:
    """Raise hnsw.ef_search for the rest of the transaction (a retry of short probes)."""
    await in_transaction(conn)
    await conn.execute(
        sa.text("SELECT set_config('hnsw.ef_search', :ef, true)"), {"ef": str(int(ef_search))}
    )
