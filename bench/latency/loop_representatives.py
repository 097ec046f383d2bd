"""A loop inside the own index, and the remedy proposed for it, measured side by side on the
1M table (issue #39, the known gap "lookups captured by the loop session"):

    python -m bench.latency.loop_representatives [--database bench_1m] [--sessions 40]
        [--near 10] [--out FILE]

On the database `python -m bench.run --size 1m --tail` leaves (the largest account's own
index merged, its 50,000-chunk loop session of one repeated vector inside the graph), the
largest account's lookups are made two ways:

- as the product makes them today, on the account's own index;
- on an index that holds one representative of each run of identical vectors in a session
  (the first written) and every other chunk, built for this run and dropped after. A lookup there
  expands each representative among its candidates into its run's chunks (the run's first
  25 by id, all at the representative's distance), then keeps the 25 nearest by distance
  and id as the exact scan does. So the answer is the one the exact path would give if the
  index finds the representative: matched counts and scores do not change.

Both are the product's lookup otherwise: iterative scan (relaxed order) at ef_search 400,
100 candidates by the index's distance re-ranked by the full-precision cosine, the probe's
own session left out. Probes are 8 chunks of each session at the product's probe positions
(in written order), for sessions sampled by a hash of their ids and for the sessions
nearest each run (the ones a loop captures). Chunk recall@25 against an exact scan, the
lookup's p50, the index's build time and size. The representatives are copied into a
table of their own (dropped after), so `session_chunks` and its indexes are not changed.
Never part of the test run."""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from uuid import UUID

import asyncpg

from bench.common.databases import libpq, with_database
from bench.common.paths import result
from config.settings import Settings, default_of
from data.model_identity import ModelIdentity
from data.model_indexes import HNSW_EF_CONSTRUCTION, HNSW_M, IndexKind, vector_expression
from data.server import resolve_url
from resolvers.rules.ranking import SIMILAR_NEIGHBOURS_PER_PROBE, probe_positions

# the product's lookup: neighbours a probe keeps, candidates read, ef_search (the defaults)
PER_PROBE = SIMILAR_NEIGHBOURS_PER_PROBE
OVERFETCH = default_of("hnsw_overfetch")
EF_SEARCH = default_of("hnsw_ef_search")
REPRESENTATIVES = "bench_loop_representatives"  # the copied rows' table (and its index's name)


@dataclass(frozen=True, slots=True)
class OwnIndex:
    """The largest account's own index: its name, predicate, model, kind and size."""

    account: UUID
    name: str
    predicate: str  # on the table's columns, no alias
    identity: ModelIdentity
    kind: IndexKind
    bytes: int


@dataclass(frozen=True, slots=True)
class Run:
    """A run of identical vectors in one session: its chunks by id, and its representative
    (the first written)."""

    session: UUID
    representative: UUID
    ids: tuple[UUID, ...]
    vector: str

    @property
    def first(self) -> tuple[UUID, ...]:
        """The chunks an exact scan keeps of the run, all at one distance: the first by id."""
        return self.ids[:PER_PROBE]

    @property
    def repeats(self) -> list[UUID]:
        return [chunk for chunk in self.ids if chunk != self.representative]


async def largest_own_index(conn: asyncpg.Connection) -> OwnIndex:
    row = await conn.fetchrow(
        "SELECT a.account_id, a.index_name, pg_get_expr(i.indpred, i.indrelid) AS predicate, "
        "a.model_identity, a.index_kind, pg_relation_size(i.indexrelid) AS bytes "
        "FROM account_model_indexes a JOIN pg_class c ON c.relname = a.index_name "
        "JOIN pg_index i ON i.indexrelid = c.oid ORDER BY a.chunks_at_build DESC LIMIT 1"
    )
    if row is None:
        raise SystemExit("no own index: run `python -m bench.run --size 1m --tail` first")
    return OwnIndex(
        row["account_id"],
        row["index_name"],
        row["predicate"],
        ModelIdentity.parse(row["model_identity"]),
        IndexKind(row["index_kind"]),
        row["bytes"],
    )


async def runs(conn: asyncpg.Connection, own: OwnIndex) -> list[Run]:
    """Every run of two or more identical vectors in one session of the index's rows."""
    rows = await conn.fetch(
        f"SELECT runtime_session_id, embedding::text AS v FROM session_chunks "
        f"WHERE {own.predicate} GROUP BY runtime_session_id, embedding HAVING count(*) > 1"
    )
    found = []
    for row in rows:
        ids = await conn.fetch(
            f"SELECT id, written_seq FROM session_chunks WHERE {own.predicate} "
            "AND runtime_session_id = $1 AND embedding = $2::vector ORDER BY id",
            row["runtime_session_id"],
            row["v"],
        )
        first_written = min(ids, key=lambda r: (r["written_seq"] or 0, r["id"]))["id"]
        found.append(
            Run(row["runtime_session_id"], first_written, tuple(r["id"] for r in ids), row["v"])
        )
    return found


async def build_representatives(conn: asyncpg.Connection, own: OwnIndex, found: list[Run]) -> float:
    """Copy the own index's rows less every repeat (a chunk of a run other than its
    representative) into a table of their own, and build the own index's kind on it; the
    build's seconds."""
    repeats = [chunk for run in found for chunk in run.repeats]
    await conn.execute(f"DROP TABLE IF EXISTS {REPRESENTATIVES}")
    await conn.execute(
        f"CREATE TABLE {REPRESENTATIVES} AS SELECT id, runtime_session_id, embedding "
        f"FROM session_chunks WHERE {own.predicate} AND id NOT IN (SELECT unnest($1::uuid[]))",
        repeats,
    )
    await conn.execute("SET maintenance_work_mem = '2GB'")
    started = time.perf_counter()
    await conn.execute(
        f"CREATE INDEX {REPRESENTATIVES}_hnsw ON {REPRESENTATIVES} USING hnsw "
        f"({own.kind.expression(own.identity)} {own.kind.value}_cosine_ops) "
        f"WITH (m = {HNSW_M}, ef_construction = {HNSW_EF_CONSTRUCTION})"
    )
    seconds = time.perf_counter() - started
    await conn.execute(f"ANALYZE {REPRESENTATIVES}")
    return seconds


async def probes(
    conn: asyncpg.Connection, own: OwnIndex, found: list[Run], sampled: int, near: int
) -> dict[str, list[tuple[UUID, str]]]:
    """(session, vector) of each probe, by set: sessions sampled by a hash of their ids, and
    the sessions nearest each run's vector."""
    in_runs = [r.session for r in found]
    random = await conn.fetch(
        f"SELECT DISTINCT runtime_session_id AS s, md5(runtime_session_id::text) FROM "
        f"session_chunks WHERE {own.predicate} AND runtime_session_id <> ALL($1::uuid[]) "
        "ORDER BY 2 LIMIT $2",
        in_runs,
        sampled,
    )
    nearest: list[UUID] = []
    for run in found:
        rows = await conn.fetch(
            f"SELECT runtime_session_id AS s, min(embedding <=> $1::vector) AS d FROM "
            f"session_chunks WHERE {own.predicate} AND runtime_session_id <> ALL($2::uuid[]) "
            "GROUP BY 1 ORDER BY 2 LIMIT $3",
            run.vector,
            in_runs,
            near,
        )
        nearest += [r["s"] for r in rows if r["s"] not in nearest]
    sets = {"sessions sampled": [r["s"] for r in random], "sessions nearest a loop": nearest}
    out: dict[str, list[tuple[UUID, str]]] = {}
    for name, sessions in sets.items():
        out[name] = []
        for session in sessions:
            chunks = await conn.fetch(
                f"SELECT embedding::text AS v FROM session_chunks WHERE {own.predicate} "
                "AND runtime_session_id = $1 ORDER BY occurred_at, chunk_index, id",
                session,
            )
            out[name] += [(session, chunks[p]["v"]) for p in probe_positions(len(chunks))]
    return out


def distance(own: OwnIndex) -> str:
    """The full-precision cosine distance to the probe ($1): the exact scan's, and the one a
    lookup re-ranks its candidates by."""
    return f"({vector_expression(own.identity)} <=> $1::vector)"


def lookup_sql(own: OwnIndex, representatives: bool) -> str:
    """The product's lookup on the account's own index, or on the representatives' copy."""
    rows = REPRESENTATIVES if representatives else f"session_chunks WHERE {own.predicate} AND"
    where = "WHERE" if representatives else ""
    return (
        f"SELECT id, d FROM (SELECT id, {distance(own)} AS d FROM {rows} "
        f"{where} runtime_session_id <> $2 "
        f"ORDER BY {own.kind.distance(own.identity, '', '$1::vector')} LIMIT {OVERFETCH}) k "
        f"ORDER BY d, id LIMIT {PER_PROBE}"
    )


async def exact(conn: asyncpg.Connection, own: OwnIndex, session: UUID, vector: str) -> set[UUID]:
    rows = await conn.fetch(
        f"SELECT id FROM session_chunks WHERE {own.predicate} AND runtime_session_id <> $2 "
        f"ORDER BY {distance(own)} + 0, id LIMIT {PER_PROBE}",
        vector,
        session,
    )
    return {r["id"] for r in rows}


def expanded(rows: Sequence[asyncpg.Record], found: list[Run]) -> set[UUID]:
    """The candidates with each representative's run standing behind it, cut to 25 as the
    exact scan cuts them (distance, then id)."""
    by_rep = {r.representative: r for r in found}
    candidates = {r["id"]: r["d"] for r in rows}
    for chunk, distance in list(candidates.items()):
        run = by_rep.get(chunk)
        if run is not None:
            candidates.update(dict.fromkeys(run.first, distance))
    kept = sorted(candidates.items(), key=lambda item: (item[1], item[0].bytes))
    return {chunk for chunk, _ in kept[:PER_PROBE]}


@dataclass(slots=True)
class Measured:
    recalls: list[float]
    took: list[float]

    def row(self, name: str, index: str) -> str:
        r = self.recalls
        perfect = sum(x == 1 for x in r)
        return (
            f"| {name} | {index} | {len(r)} | {statistics.fmean(r):.3f} | {min(r):.2f} | "
            f"{perfect} of {len(r)} | {statistics.median(self.took) * 1000:.1f} ms |"
        )


async def measure(
    conn: asyncpg.Connection,
    own: OwnIndex,
    found: list[Run],
    asked: list[tuple[UUID, str]],
    truths: list[set[UUID]],
    representatives: bool,
) -> Measured:
    sql = lookup_sql(own, representatives)
    session, vector = asked[0]
    plan = "\n".join(r[0] for r in await conn.fetch("EXPLAIN " + sql, vector, session))
    wanted = f"{REPRESENTATIVES}_hnsw" if representatives else own.name
    if wanted not in plan:
        raise SystemExit(f"the lookup does not scan {wanted}:\n{plan}")
    measured = Measured([], [])
    for (session, vector), truth in zip(asked, truths, strict=True):
        started = time.perf_counter()
        rows = await conn.fetch(sql, vector, session)
        got = expanded(rows, found) if representatives else {r["id"] for r in rows}
        measured.took.append(time.perf_counter() - started)
        measured.recalls.append(len(got & truth) / len(truth))
    return measured


async def run(database: str, sampled: int, near: int) -> str:
    settings = Settings.from_env()
    url = with_database(resolve_url(settings.database_url, settings.data_dir), database)
    conn = await asyncpg.connect(libpq(url))
    try:
        await conn.execute("SET statement_timeout = 0")
        own = await largest_own_index(conn)
        found = await runs(conn, own)
        say(f"{len(found)} runs of identical vectors ({sum(len(r.ids) for r in found)} chunks)")
        seconds = await build_representatives(conn, own, found)
        size = int(await conn.fetchval(f"SELECT pg_relation_size('{REPRESENTATIVES}_hnsw')"))
        say(f"representatives' index built in {seconds:.0f} s")
        asked = await probes(conn, own, found, sampled, near)
        await conn.execute(f"SET hnsw.ef_search = {EF_SEARCH}")
        await conn.execute("SET hnsw.iterative_scan = 'relaxed_order'")
        rows = []
        for name, probe_list in asked.items():
            if not probe_list:
                continue
            truths = [await exact(conn, own, s, v) for s, v in probe_list]
            today = await measure(conn, own, found, probe_list, truths, representatives=False)
            remedy = await measure(conn, own, found, probe_list, truths, representatives=True)
            rows += [
                today.row(name, f"own index (today, {own.bytes / 2**20:.0f} MB)"),
                remedy.row(name, f"one vector a run, expanded ({size / 2**20:.0f} MB)"),
            ]
            say(rows[-2])
            say(rows[-1])
        return report(own, found, seconds, rows, sampled, near)
    finally:
        try:
            await conn.execute(f"DROP TABLE IF EXISTS {REPRESENTATIVES}")
        except (asyncpg.PostgresError, OSError, asyncio.CancelledError) as exc:
            say(f"could not drop {REPRESENTATIVES} ({type(exc).__name__}): drop it by hand")
        finally:
            await conn.close()


def say(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


def report(
    own: OwnIndex, found: list[Run], seconds: float, rows: list[str], sampled: int, near: int
) -> str:
    chunks = sum(len(r.ids) for r in found)
    return (
        "# A loop inside the own index, and one vector a run, at 1M\n\n"
        f"`python -m bench.latency.loop_representatives --sessions {sampled} --near {near}` "
        "(see its docstring), on the database `python -m bench.run --size 1m --tail` leaves. "
        f"The largest account's own index ({own.name}); {len(found)} run(s) of identical "
        f"vectors in a session, {chunks:,} chunks; the index of one vector a run built beside "
        f"it in {seconds:.0f} s. Lookups at ef_search {EF_SEARCH}, {OVERFETCH} candidates "
        f"re-ranked, chunk recall@{PER_PROBE} against an exact scan; one run, side by side.\n\n"
        "| probes of | index | probes | chunk recall@25 | worst probe | all 25 found | "
        "lookup p50 |\n|---|---|---|---|---|---|---|\n" + "\n".join(rows) + "\n"
    )


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m bench.latency.loop_representatives", description=__doc__
    )
    parser.add_argument("--database", default="bench_1m")
    parser.add_argument("--sessions", type=int, default=40, help="sessions sampled")
    parser.add_argument("--near", type=int, default=10, help="sessions nearest each run")
    parser.add_argument("--out", help="default bench/results/loop-representatives-1m.md")
    opts = parser.parse_args(argv)
    text = asyncio.run(run(opts.database, opts.sessions, opts.near))
    print(text)
    out = opts.out or result("loop-representatives", "1m")
    with open(out, "w", encoding="utf-8") as handle:
        handle.write(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
