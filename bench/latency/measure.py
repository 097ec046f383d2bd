"""What the latency run measures with: the exact scan, the served lookups and their recall."""

from __future__ import annotations

import dataclasses
import uuid
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime

import sqlalchemy as sa
from sqlalchemy.ext.asyncio import AsyncEngine

from bench.common.routes import planned_route
from bench.latency.corpus import IDENTITY
from data import comparison
from data.account_snapshot import Snapshots
from data.lookups import Ask
from data.model_identity import ModelIdentity
from data.model_indexes import comparable_predicate
from resolvers.arguments import SimilarArgs
from resolvers.comparison.check_costs import CheckCosts
from resolvers.comparison.phases import batch_of, look_up
from resolvers.comparison.state import NOT_NARROWED, Batch
from resolvers.rules import ranking
from resolvers.rules.lookup_path import LookupPath
from resolvers.rules.lookup_plan import Caller, plan
from resolvers.tuning import Tuning
from values.lookups import Hit

PER_PROBE = ranking.SIMILAR_NEIGHBOURS_PER_PROBE
FLOOR = ranking.MIN_SIMILAR_SIMILARITY


# The one-pass exact scan, written independently of the product's SQL: every probe's
# distance to every comparable chunk of the account in one statement, ranked per probe.
def exact_scan_sql(identity: ModelIdentity = IDENTITY) -> str:
    d = identity.dimensions
    return f"""
WITH p AS MATERIALIZED (
  SELECT u.ord AS probe, c.runtime_session_id AS sid, (c.embedding::vector({d})) AS v
  FROM unnest(CAST(:ids AS uuid[])) WITH ORDINALITY AS u(id, ord)
  JOIN session_chunks c ON c.account_id = :account AND c.id = u.id)
SELECT probe - 1, id, sid, 1 - d FROM (
  SELECT probe, id, sid, d, row_number() OVER (PARTITION BY probe ORDER BY d, id) AS rn
  FROM (SELECT p.probe, c.id, c.runtime_session_id AS sid,
               (c.embedding::vector({d})) <=> p.v AS d
        FROM p JOIN session_chunks c ON c.account_id = :account
         AND {comparable_predicate(identity, "c")} AND c.runtime_session_id <> p.sid
        OFFSET 0) AS scored
  WHERE 1 - d >= {FLOOR}) AS ranked
WHERE rn <= {PER_PROBE}
"""


EXACT_SCAN = exact_scan_sql()


@dataclass
class Probe:
    account: uuid.UUID
    session: uuid.UUID
    chunks: list[uuid.UUID]


@dataclass
class Figures:
    name: str
    chunks: int
    sessions: int
    path: str = ""
    chunk_recall: list[float] = field(default_factory=list)
    session_recall: list[float] = field(default_factory=list)
    route_ms: list[float] = field(default_factory=list)
    httpx_ms: list[float] = field(default_factory=list)  # the same route, sent by httpx
    inproc_ms: list[float] = field(default_factory=list)
    sql_ms: list[float] = field(default_factory=list)
    exact_ms: list[float] = field(default_factory=list)


async def probes_of(
    engine: AsyncEngine, account: uuid.UUID, session: uuid.UUID, identity: ModelIdentity = IDENTITY
) -> Probe:
    async with engine.connect() as conn:
        rows = await conn.execute(
            sa.text(
                "SELECT id FROM session_chunks WHERE account_id = :a AND runtime_session_id = :s "
                f"AND {comparable_predicate(identity)} ORDER BY occurred_at, chunk_index, id"
            ),
            {"a": account, "s": session},
        )
        chunks = [row[0] for row in rows]
    return Probe(account, session, [chunks[p] for p in ranking.probe_positions(len(chunks))])


async def _looked(engine: AsyncEngine, probe: Probe, path: LookupPath, tuning: Tuning) -> Batch:
    """The product's first statement (and its retry of short probes) for one session, with
    the exact-scan size that forces the path (the account's own index when it has one)."""
    cap = 100_000_000 if path is LookupPath.EXACT else 0
    forced = dataclasses.replace(tuning, exact_scan_max_chunks=cap)
    batch = batch_of(
        probe.account, [(probe.session, SimilarArgs(), NOT_NARROWED)], datetime.now(UTC)
    )
    async with engine.connect() as conn:
        return await look_up(conn, batch, forced, Snapshots(), CheckCosts())


async def served(engine: AsyncEngine, probe: Probe, path: LookupPath, tuning: Tuning) -> list[Hit]:
    """The served per-probe lists; on the shared index even where the account has its own (its
    registration is deleted within the lookup's transaction, which is rolled back)."""
    if path is LookupPath.INDEX:
        limits = replace(plan(Caller.COMPARISON, tuning).limits(), exact_scan_max_chunks=0)
        async with engine.connect() as conn, conn.begin() as unregistered:
            await conn.execute(
                sa.text("DELETE FROM account_model_indexes WHERE account_id = :a"),
                {"a": probe.account},
            )
            route = await planned_route(
                conn, probe.account, replace(tuning, exact_scan_max_chunks=0)
            )
            await comparison.configure_comparison(conn, tuning.comparison_settings)
            ask = Ask(0, probe.session)
            looked = await comparison.look_up(conn, probe.account, [ask], [IDENTITY], limits, route)
            await unregistered.rollback()
        found = looked.inventories[0]
        return [] if found is None else [h for p in found.probes for h in p.answer.hits]
    batch = await _looked(engine, probe, path, tuning)
    return [h for c in batch.comparisons for h in c.hits()]


async def exact(engine: AsyncEngine, probe: Probe, identity: ModelIdentity = IDENTITY) -> list[Hit]:
    async with engine.begin() as conn:
        rows = await conn.execute(
            sa.text(exact_scan_sql(identity)), {"ids": probe.chunks, "account": probe.account}
        )
        return [Hit(int(r[0]), r[1], r[2], float(r[3])) for r in rows]


def recalls(got: list[Hit], truth: list[Hit]) -> tuple[list[float], float]:
    """(chunk recall@25 of each probe with an exact answer, session recall@10)."""
    per_probe = []
    for n in {h.probe for h in truth}:
        want = {h.chunk_id for h in truth if h.probe == n}
        have = {h.chunk_id for h in got if h.probe == n}
        per_probe.append(len(want & have) / len(want))
    top = [n.session_id for n in ranking.rank_neighbours(truth, 2)[:10]]
    mine = {n.session_id for n in ranking.rank_neighbours(got, 2)[:10]}
    session = 1.0 if not top else len(set(top) & mine) / len(top)
    return per_probe, session


async def path_of(engine: AsyncEngine, account: uuid.UUID, tuning: Tuning) -> LookupPath:
    """The path the product takes for the account, read from its first statement."""
    async with engine.connect() as conn:
        session = (
            await conn.execute(
                sa.text(
                    "SELECT runtime_session_id FROM session_chunks WHERE account_id = :a "
                    f"AND {comparable_predicate(IDENTITY)} LIMIT 1"
                ),
                {"a": account},
            )
        ).scalar_one()
    batch = batch_of(account, [(session, SimilarArgs(), NOT_NARROWED)], datetime.now(UTC))
    async with engine.connect() as conn:
        batch = await look_up(conn, batch, tuning, Snapshots(), CheckCosts())
    path = batch.path(str(IDENTITY))
    assert path is not None
    return path
