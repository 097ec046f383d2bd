"""The comparison's first statement (the setting, the asked sessions, their inventories,
probes, lookup paths and every probe's nearest chunks), read into typed rows
(data/lookups.py), and the settings and budgets it runs under."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Iterator, Mapping, Sequence
from contextlib import asynccontextmanager, contextmanager
from dataclasses import dataclass, field, replace
from datetime import datetime
from types import SimpleNamespace
from typing import Any
from uuid import UUID

import sqlalchemy as sa
from sqlalchemy.engine import Row
from sqlalchemy.exc import DBAPIError
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine

from data.account_indexes import IndexShape
from data.accounts import EmbeddingSetting, setting_of
from data.comparison_sql import (
    ANSWER,
    TIMELINE_ANSWER,
    RowKind,
    first_statement,
    search_statement,
)
from data.engine import is_out_of_resources, json_statement
from data.errors import ComparisonTimedOut, StatementTimedOut
from data.lookups import Ask, Counted, Inventory, Lookup, LookupAnswer, ModelPath, Probe, TextAnswer
from data.model_identity import ModelIdentity
from data.sessions import SessionRow
from data.vector_slots import VectorSlot
from values.lookups import ComparisonSettings, Hit, Limits, LookupPath, ScanWindow

# Batches of more asks or comparisons than this are read and assembled in a worker thread
# (resolvers/comparison/answer.py too): hundreds (the failure modes' pass) take a few hundred
# milliseconds of Python, a page of 20 a few.
THREADED_AFTER = 50


@dataclass(frozen=True, slots=True)
class Route:
    """How a statement's lookups go, as the plan decided them: each model's path and its
    comparable chunks (model identity -> ModelPath; a model not named is exact), the shapes
    of the indexes its text names (model identity -> IndexShape), and whether exact lookups
    rank a pool of the account's chunks read once (a page of probes on a small account) or
    each scan the account (the exact check of a few probes, on an account of any size)."""

    paths: Mapping[str, ModelPath] = field(default_factory=dict)
    marks: Mapping[str, IndexShape] = field(default_factory=dict)
    pooled: bool = True

    def params(self) -> dict[str, Any]:
        """The paths as the statements take them (:paths, model -> [path, comparable])."""
        paths = {m: [p.path.value, p.comparable] for m, p in self.paths.items()}
        return {"paths": json.dumps(paths)}


async def look_up(
    conn: AsyncConnection,
    account_id: UUID,
    asks: Sequence[Ask],
    models: Sequence[ModelIdentity],
    limits: Limits,
    route: Route | None = None,
) -> LookupAnswer:
    """The comparison's first statement, for every ask at once (an ask naming probes `again`
    has only those looked up), each model's lookups on the route's path (none given: every
    lookup exact, ranking a pool)."""
    rows = await _first(conn, account_id, asks, models, limits, ANSWER, route or Route())

    def read() -> LookupAnswer:
        answer = _Answer.read(rows)
        inventories = tuple(answer.inventory(ask.key) for ask in asks)
        return LookupAnswer(answer.setting, inventories, answer.paths)

    # Hundreds of asks (the failure modes' pass) are read in a worker thread: the event
    # loop serves other requests meanwhile.
    return read() if len(asks) <= THREADED_AFTER else await asyncio.to_thread(read)


@dataclass(frozen=True, slots=True)
class Timeline:
    """The timeline's statement: each model's path, and per ask its count (None for a
    session the account does not have)."""

    paths: dict[str, ModelPath]
    counts: tuple[Counted | None, ...]


async def count_matches(
    conn: AsyncConnection,
    account_id: UUID,
    asks: Sequence[Ask],
    models: Sequence[ModelIdentity],
    limits: Limits,
    route: Route,
    bucket: str,
    related: dict[str, float],
) -> Timeline:
    """Per ask, its sessions at or above its model's related cut point (`related`, by
    model) among its probes' nearest chunks, counted by `bucket` (day, week or month)."""
    params = {"bucket": bucket, "related": json.dumps(related)}
    rows = await _first(conn, account_id, asks, models, limits, TIMELINE_ANSWER, route, params)
    answer = _Answer.read(rows)
    return Timeline(answer.paths, tuple(answer.counted(ask.key) for ask in asks))


async def _first(
    conn: AsyncConnection,
    account_id: UUID,
    asks: Sequence[Ask],
    models: Sequence[ModelIdentity],
    limits: Limits,
    answer: str,
    route: Route,
    extra: dict[str, Any] | None = None,
) -> Sequence[Row[Any]]:
    filtered = any(a.filtered for a in asks)
    statement = first_statement(models, account_id, filtered, answer, route.pooled, route.marks)
    rows = await conn.execute(
        json_statement(statement, "payload"),
        {
            "account_id": account_id,
            "asks": json.dumps([a.as_json() for a in asks]),
            "branch_models": [str(m) for m in models],
            **_limit_params(limits),
            **route.params(),
            **{f"floor_{n}": limits.floor_for(str(m)) for n, m in enumerate(models)},
            **(extra or {}),
        },
    )
    return rows.all()


async def look_up_text(
    conn: AsyncConnection,
    account_id: UUID,
    identity: ModelIdentity,
    vector: str,
    ask: Ask,
    limits: Limits,
    route: Route,
    slot: VectorSlot = VectorSlot.PRIMARY,
) -> TextAnswer:
    """A search text's vector as the one probe (probe 0) of the account's chunks of the
    model (in the slot): same paths and candidates as a comparison's probes, no own
    session; on the route's path (its exact lookup scans: one probe gains nothing from a
    pool)."""
    statement = search_statement(identity, account_id, ask.filtered, slot, route.marks)
    rows = await conn.execute(
        json_statement(statement, "payload"),
        {
            "account_id": account_id,
            "vector": vector,
            "cutoff": ask.cutoff,
            "statuses": None if ask.statuses is None else list(ask.statuses),
            "source_types": None if ask.source_types is None else list(ask.source_types),
            **_limit_params(limits),
            **route.params(),
            "floor_0": limits.floor_for(str(identity)),
        },
    )
    answer = _Answer.read(rows.all())
    return TextAnswer(answer.paths[str(identity)], answer.lookups.get((0, 0), Lookup()))


@dataclass
class _Answer:
    """An answer's rows by kind, each kind read into its typed row (one per kind)."""

    setting: EmbeddingSetting | None
    asks: dict[int, dict[str, Any]]
    paths: dict[str, ModelPath]
    lookups: dict[tuple[int, int], Lookup]

    @classmethod
    def read(cls, rows: Sequence[Row[Any]]) -> _Answer:
        answer = cls(None, {}, {}, {})
        for row in rows:
            kind: RowKind = row.kind
            if kind == "lookup":
                answer.lookups[row.key, row.probe] = _lookup(row)
            elif kind == "ask":
                answer.asks[row.key] = row.payload
            elif kind == "path":
                model, path = row.payload
                answer.paths[model] = ModelPath(LookupPath(path), row.probe)
            else:
                answer.setting = setting_of(SimpleNamespace(**row.payload))
        return answer

    def inventory(self, key: int) -> Inventory | None:
        """The ask's inventory, its probes answered by their lookups; None when not found."""
        found = self.asks.get(key)
        if found is None:
            return None
        probes = tuple(
            Probe(n, UUID(chunk_id), lookup, self.lookups.get((key, n), Lookup()))
            for n, chunk_id, lookup in found["probes"]
        )
        return Inventory(
            session_of(found["session"]),
            found["embedded"],
            found["pending"],
            found["model"],
            found["chunks"],
            probes,
        )

    def counted(self, key: int) -> Counted | None:
        found = self.asks.get(key)
        if found is None:
            return None
        buckets = tuple((datetime.fromisoformat(start), n) for start, n in found["buckets"])
        return Counted(found["model"], buckets, found["bounded"])


def _lookup(row: Any) -> Lookup:
    """One lookup's hits, given as three aligned arrays, and its window when it has one."""
    hits = tuple(
        Hit(row.probe, chunk_id, session_id, similarity)
        for chunk_id, session_id, similarity in zip(
            row.chunk_ids or (), row.session_ids or (), row.similarities or (), strict=True
        )
    )
    return Lookup(hits, None if row.payload is None else ScanWindow(*row.payload))


def _limit_params(limits: Limits) -> dict[str, Any]:
    """The lookups' bounds, as both statements take them."""
    return {
        "per_probe": limits.per_probe,
        "overfetch": limits.window,
        "probes": limits.probes,
    }


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
    except StatementTimedOut:
        raise ComparisonTimedOut from None


@asynccontextmanager
async def own_budget(conn: AsyncConnection, budget_ms: int) -> AsyncIterator[None]:
    """The block's statements run in a savepoint under their own time budget; when they run
    past it, or the server lacks the resources for them (an exact pass spilling past
    `temp_file_limit`, say), the block ends there and nothing is raised. The savepoint is
    rolled back either way (lookups only read), which also gives the comparison's
    transaction its own budget back, usable after a cancelled statement."""
    await in_transaction(conn)
    savepoint = await conn.begin_nested()
    try:
        await conn.execute(
            sa.text("SELECT set_config('statement_timeout', :ms, true)"), {"ms": str(budget_ms)}
        )
        yield
    except StatementTimedOut:
        pass
    except DBAPIError as exc:
        if not is_out_of_resources(exc):
            raise
    finally:
        await savepoint.rollback()


async def ensure_configured(conn: AsyncConnection, settings: ComparisonSettings) -> None:
    """A connection opened for comparisons already has their settings: no statement then.
    One of them at another ef_search (its last comparison was of an account with another
    fit, data/ef_fits.py) has this one set for its session, in one statement outside any
    transaction, and remembers it: a comparison sends it only when the fit changes."""
    opened = conn.info.get("comparison")
    if opened == settings:
        return
    other_width = opened is not None and replace(opened, ef_search=settings.ef_search) == settings
    if other_width and _autocommit(conn):
        await conn.execute(
            sa.text("SELECT set_config('hnsw.ef_search', :ef, false)"),
            {"ef": str(settings.ef_search)},
        )
        conn.info["comparison"] = settings
        return
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


def _autocommit(conn: AsyncConnection) -> bool:
    """Whether the connection's statements run in autocommit (`reading`)."""
    options = conn.sync_connection.get_execution_options() if conn.sync_connection else {}
    return options.get("isolation_level") == "AUTOCOMMIT"


async def in_transaction(conn: AsyncConnection) -> None:
    """Make the connection's next statement begin a transaction if it runs in autocommit
    (`reading`): for a setting that must last into the statement after it, or a savepoint.
    Nothing was begun at the server, so ending SQLAlchemy's own transaction sends nothing."""
    if _autocommit(conn):
        await conn.commit()
        await conn.execution_options(isolation_level="READ COMMITTED")


async def widen_search(conn: AsyncConnection, ef_search: int) -> None:
    """Raise hnsw.ef_search for the rest of the transaction (a retry of short probes)."""
    await in_transaction(conn)
    await search_at(conn, ef_search)


async def search_at(conn: AsyncConnection, ef_search: int) -> None:
    """Set hnsw.ef_search for the rest of the transaction `widen_search` began (back to the
    plan's once the wider retry is done)."""
    await conn.execute(
        sa.text("SELECT set_config('hnsw.ef_search', :ef, true)"), {"ef": str(int(ef_search))}
    )
