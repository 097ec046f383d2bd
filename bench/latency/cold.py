"""The cold account (issue #39): the issue's clustered 25k account's sampled sessions asked
once each on a server that knows nothing of the account yet (cold), then again (warm), side
by side in one run, beside the exact path's figure for the same sessions.

Cold is measured over HTTP, each time on a new `similar-sessions serve` (a new process: a new
engine and connection pool, a new model catalog, new check costs, no own-index marks): right
after an import (an account of the same world drawn anew, in a database of its own dropped
after, written by `similar-sessions import` from a file, which builds its indexes,
refreshes the statistics and fits its own index), on the issue's account with PostgreSQL's
shared buffers emptied first (pg_buffercache_evict_all, PostgreSQL 18), and after a server
restart, with PostgreSQL's buffers as the server before it left them. The OS page cache cannot
be dropped here (/proc/sys/vm/drop_caches is not writable in this container), so a page missing from
shared_buffers is read from the OS cache, not from the disk: the cold figures are a lower
bound of a real disk's.

Where the cold time goes is measured in process the same way (a new engine, catalog, check
costs and marks; the buffers emptied): the comparison's phases cold against warm, the pages
each round brought into shared_buffers (misses, counted with pg_buffercache), what the
pieces before the first statement cost (a new connection, the model catalog's read), and
the first statement under EXPLAIN (ANALYZE, BUFFERS) on a new backend with the buffers
emptied against the same statement warm."""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import tempfile
import uuid
from dataclasses import dataclass, field, replace
from pathlib import Path

import numpy as np
import sqlalchemy as sa
from sqlalchemy.ext.asyncio import AsyncEngine

from bench.common.databases import drop, recreate
from bench.common.paths import RESULTS, checkout_env
from bench.common.timing import clocked, p50
from bench.latency import clustered
from bench.latency.buffers import PARTS, autovacuuming, evict_buffers, in_buffers
from bench.latency.cold_in_process import WARM_ROUNDS, InProcessCold, in_process
from bench.latency.corpus import Account, write_import_file
from bench.latency.database import create_accounts
from bench.latency.phase_times import PHASES, checks_run, mean_ms
from bench.latency.real_vectors import EXACT_FORCED, Measured, World
from bench.latency.report import Report
from bench.latency.server import LeanClient, start_server
from data.engine import make_engine
from data.migrate import migrate

FRESH_DRAW = 39  # the fresh account's draw of the world (the world's own are 0 to 11)


@dataclass
class Round:
    """One pass over the sampled sessions: each one's route (ms), the server's elapsed_ms,
    and the pages the pass brought into shared_buffers, by part."""

    name: str
    route_ms: list[float] = field(default_factory=list)
    elapsed_ms: list[float] = field(default_factory=list)
    misses: dict[str, int] = field(default_factory=dict)
    autovacuum: bool = False  # an autovacuum worker ran in the database at its start or end


async def _asked(
    engine: AsyncEngine,
    client: LeanClient,
    fig: Measured,
    name: str,
    rounds: int = 1,
    asked: tuple[Account, list[uuid.UUID]] | None = None,
) -> Round:
    """The sampled sessions (of another account, when `asked`) asked `rounds` times over
    HTTP, in order."""
    account, sessions = asked or (fig.account, fig.picked)
    headers = {"authorization": f"Bearer {account.key}"}
    out = Round(name)
    out.autovacuum = await autovacuuming(engine)
    before = await in_buffers(engine)
    for _ in range(rounds):
        for s in sessions:
            route = f"/api/v1/runtime-sessions/{s}/similar"
            ms, reply = await clocked(client.get(route, params={"limit": 10}, headers=headers))
            assert reply.status_code == 200, reply.text
            out.route_ms.append(ms)
            out.elapsed_ms.append(float(reply.json()["elapsed_ms"]))
    after = await in_buffers(engine)
    out.misses = {p: after.get(p, 0) - before.get(p, 0) for p in PARTS}
    out.autovacuum = out.autovacuum or await autovacuuming(engine)
    return out


async def over_http(
    report: Report, world: World, engine: AsyncEngine, fig: Measured
) -> list[Round]:
    """Cold right after an import, warm, the exact path; cold with the buffers emptied, warm;
    cold after a restart, warm; warm with the buffers emptied."""
    log = RESULTS / f"server-{world.name}-cold.log"
    rounds = []
    url, fresh = await imported(report, world, fig)
    try:
        new = make_engine(url, pool_size=1)
        try:
            proc, base = start_server(url, report.tuning, log)
            try:
                client = LeanClient(base)
                for name, times in [("cold: right after an import", 1), ("warm", WARM_ROUNDS)]:
                    rounds.append(await _asked(new, client, fig, f"{name} *", times, fresh))
            finally:
                proc.terminate()
                proc.wait(timeout=10)
            exact = replace(report.tuning, exact_scan_max_chunks=EXACT_FORCED)
            proc, base = start_server(url, exact, RESULTS / f"server-{world.name}-cold-exact.log")
            try:
                client = LeanClient(base)
                await _asked(new, client, fig, "untimed", 1, fresh)
                name = "exact path forced (warm) *"
                rounds.append(await _asked(new, client, fig, name, WARM_ROUNDS, fresh))
            finally:
                proc.terminate()
                proc.wait(timeout=10)
        finally:
            await new.dispose()
    finally:
        await drop(url, url.rsplit("/", 1)[1].split("?")[0])
    await evict_buffers(engine)
    proc, base = start_server(world.url, report.tuning, log)
    try:
        client = LeanClient(base)
        rounds.append(await _asked(engine, client, fig, "cold: buffers emptied"))
        rounds.append(await _asked(engine, client, fig, "warm", WARM_ROUNDS))
    finally:
        proc.terminate()
        proc.wait(timeout=10)
    proc, base = start_server(world.url, report.tuning, log)
    try:
        client = LeanClient(base)
        rounds.append(await _asked(engine, client, fig, "cold: after a server restart"))
        rounds.append(await _asked(engine, client, fig, "warm (after the restart)", WARM_ROUNDS))
        await evict_buffers(engine)
        rounds.append(await _asked(engine, client, fig, "server warm, buffers emptied"))
    finally:
        proc.terminate()
        proc.wait(timeout=10)
    return rounds


async def imported(
    report: Report, world: World, fig: Measured
) -> tuple[str, tuple[Account, list[uuid.UUID]]]:
    """A database of its own (dropped after) holding an account like `fig`'s (its world's
    noise and size, drawn anew) written by `similar-sessions import` (the account created
    first, its sessions and chunks then imported from a file with the bench's exact-scan
    size, as an operator would: the import builds the shared and the account's own index,
    refreshes the statistics and fits the own one); its URL, the account and SAMPLED of its
    sessions. The import's seconds by phase are kept in IMPORT_SECONDS for the report."""
    like = next(w for w in clustered.plan() if w.account.name == fig.account.name)
    rng = np.random.default_rng(FRESH_DRAW)
    account = Account(
        uuid.UUID(bytes=rng.bytes(16), version=4),
        f"{fig.account.name}-fresh",
        f"sk-bench-{fig.account.name}-fresh-{FRESH_DRAW}",
        fig.account.size,
        fig.account.longest,
    )
    name = world.url.rsplit("/", 1)[1].split("?")[0] + "_fresh"
    url = await recreate(world.url, name)
    engine = make_engine(url, statement_timeout_ms=0)
    try:
        await migrate(engine)
        await create_accounts(engine, [account])
        async with engine.begin() as conn:
            await conn.execute(sa.text("CREATE EXTENSION IF NOT EXISTS pg_buffercache"))
    finally:
        await engine.dispose()
    sessions, chunks, _ = clustered.generate(
        clustered.ClusteredAccount(like.noise, account), FRESH_DRAW
    )
    with tempfile.TemporaryDirectory() as folder:
        path = write_import_file(Path(folder) / f"{account.name}.jsonl", sessions, chunks)
        IMPORT_SECONDS.update(import_with_cli(url, path, report.tuning.exact_scan_max_chunks))
    picked = account.sessions
    return url, (
        account,
        [picked[i] for i in rng.choice(len(picked), len(fig.picked), replace=False)],
    )


IMPORT_SECONDS: dict[str, float] = {}


def import_with_cli(url: str, path: Path, exact_scan_max_chunks: int) -> dict[str, float]:
    """`similar-sessions import FILE` in a process of its own; its seconds by phase (from
    its `imported` log line)."""
    env = checkout_env(
        {
            **os.environ,
            "DATABASE_URL": url,
            "SIMILAR_SESSIONS_LOG_LEVEL": "INFO",
            "SIMILAR_SESSIONS_EXACT_SCAN_MAX_CHUNKS": str(exact_scan_max_chunks),
        }
    )
    cli = Path(sys.executable).with_name("similar-sessions")
    done = subprocess.run(
        [str(cli), "import", str(path)], env=env, capture_output=True, text=True, check=False
    )
    if done.returncode != 0:
        raise SystemExit(f"import failed ({done.returncode}):\n{done.stderr[-3000:]}")
    for line in done.stderr.splitlines():
        if line.startswith("{") and '"imported"' in line:
            return {k: float(v) for k, v in json.loads(line).get("seconds", {}).items()}
    return {}


async def cold_account(report: Report, world: World, fig: Measured) -> None:
    """The cold and warm figures of the account, said as two tables (see the docstring)."""
    engine = make_engine(world.url, pool_size=1, statement_timeout_ms=120_000)
    try:
        async with engine.begin() as conn:
            await conn.execute(sa.text("CREATE EXTENSION IF NOT EXISTS pg_buffercache"))
        rounds = await over_http(report, world, engine, fig)
        measured = await in_process(report, world, engine, fig)
    finally:
        await engine.dispose()
    say(report, fig, rounds, measured)


def _warm_of(rounds: list[Round], r: Round) -> Round:
    """The warm pass of the same account as `r` (the fresh account's are marked *)."""
    fresh = r.name.endswith("*")
    return next(w for w in rounds if w.name.startswith("warm") and w.name.endswith("*") == fresh)


def _import_phases() -> str:
    return ", ".join(f"{phase} {s:.1f} s" for phase, s in IMPORT_SECONDS.items()) or "no phases"


def say(report: Report, fig: Measured, rounds: list[Round], m: InProcessCold) -> None:
    exact = p50(fig.exact_ms)
    fresh_exact = p50(next(r for r in rounds if r.name.startswith("exact path")).route_ms)
    report.say(f"### The cold account: {fig.label} asked first on a new server, then again")
    report.say()
    report.say(
        f"{len(fig.picked)} sessions, each asked once on a new server process (new engine "
        "and pool, model catalog, check costs, own-index marks), then warm, the same sessions "
        f"{WARM_ROUNDS} times more on the same server. Marked *: an account like "
        f"{fig.label} drawn anew and written by `similar-sessions import` (in a database "
        "of its own; the import builds its indexes, refreshes the statistics and fits its own "
        f"index: {_import_phases()}), asked right after, and its exact "
        "path forced (a server with SIMILAR_SESSIONS_EXACT_SCAN_MAX_CHUNKS past it, warm); "
        f"the others: {fig.label}'s sessions sampled above, on a new server after "
        "PostgreSQL's shared buffers were emptied (pg_buffercache_evict_all), after a "
        "server restart (buffers kept), and with the buffers emptied under a warm server; "
        "its exact path is the route above with the exact path forced. The OS page cache "
        "cannot be dropped here (/proc/sys/vm/drop_caches is not writable), so a page "
        "missing from shared_buffers is read from it, not from the disk. Route p50 over HTTP "
        "(the first request beside it) and the server's elapsed_ms p50; pages brought into "
        "shared_buffers by the pass (misses: the table, the own index, the table's other "
        "indexes), and whether an autovacuum worker ran in the database at the pass's start "
        "or end:"
    )
    report.say()
    report.say(
        "| pass | requests | route p50 (first) | elapsed_ms p50 | / warm | / exact path "
        "| pages missed: table / own index / other | autovacuum running |"
    )
    report.say("|---|---|---|---|---|---|---|---|")
    for r in rounds:
        route, warm = p50(r.route_ms), p50(_warm_of(rounds, r).route_ms)
        against = fresh_exact if r.name.endswith("*") else exact
        report.say(
            f"| {r.name} | {len(r.route_ms)} | {route:.1f} ({r.route_ms[0]:.0f}) "
            f"| {p50(r.elapsed_ms):.1f} | {route / warm:.2f} | {route / against:.2f} "
            f"| {' / '.join(str(r.misses.get(p, 0)) for p in PARTS)} "
            f"| {'yes' if r.autovacuum else 'no'} |"
        )
    report.say(f"| exact path forced (warm) | {len(fig.exact_ms)} | {exact:.1f} | | | 1.00 | | |")
    report.say()
    cold_total = [t.total_ms for t in m.cold]
    warm_total = [t.total_ms for t in m.warm]
    report.say(
        "The same in process (a new engine, catalog, check costs and marks; the buffers "
        "emptied): mean ms per comparison by phase (p50 beside it), the exact checks run, and "
        "the pages missed:"
    )
    report.say()
    report.say(
        f"| pass | p50 | mean | {' | '.join(PHASES)} | checks run | widened | pages missed: "
        "table / own index / other |"
    )
    report.say("|---|---|---|" + "---|" * len(PHASES) + "---|---|---|")
    for name, tallies, totals, misses in [
        ("cold", m.cold, cold_total, m.cold_misses),
        ("warm", m.warm, warm_total, m.warm_misses),
    ]:
        widened = sum(1 for t in tallies if t.widened)
        report.say(
            f"| {name} | {p50(totals):.1f} | {statistics.fmean(totals):.1f} "
            + "".join(f"| {mean_ms(tallies, p):.1f} " for p in PHASES)
            + f"| {checks_run(tallies)} | {widened} of {len(tallies)} "
            f"| {' / '.join(str(misses.get(p, 0)) for p in PARTS)} |"
        )
    report.say()
    report.say(
        f"Before the first statement: a new connection {p50(m.connect_ms):.1f} ms (a pooled "
        f"one {p50(m.pooled_ms):.2f} ms); the model catalog's read (models, fits, marks) "
        f"{p50(m.catalog_cold_ms):.1f} ms with the buffers emptied, {p50(m.catalog_ms):.1f} ms "
        "by a new catalog right after (a cached catalog reads nothing); medians of 3."
    )
    report.say()
    if m.explained:
        report.say(
            "The first session's first statement under EXPLAIN (ANALYZE, BUFFERS), generic "
            "plan, at the account's ef_search: on a new backend with the buffers emptied, then "
            "again on the same backend:"
        )
        report.say()
        report.say(
            "| run | planning ms | planning pages hit / read | execution ms | pages hit / read |"
        )
        report.say("|---|---|---|---|---|")
        for name, e in m.explained.items():
            report.say(
                f"| {name} | {e['planning_ms']:.1f} | {e['planning_hit']} / {e['planning_read']} "
                f"| {e['execution_ms']:.1f} | {e['hit']} / {e['read']} |"
            )
        report.say()
    for r in rounds:
        if r.name.startswith("cold"):
            settled = _warm_of(rounds, r)
            ratio = p50(r.route_ms) / p50(settled.route_ms)
            report.target(
                f"{fig.label} {r.name}: route p50 within 1.5x of warm",
                f"{ratio:.2f} ({p50(r.route_ms):.1f} / {p50(settled.route_ms):.1f} ms)",
                ratio <= 1.5,
            )
    for settled, against in [
        (_warm_of(rounds, Round("*")), fresh_exact),
        (_warm_of(rounds, Round("")), exact),
    ]:
        ratio = p50(settled.route_ms) / against
        report.target(
            f"{fig.label} {settled.name}: route p50 at most 0.3x of the exact path",
            f"{ratio:.2f} ({p50(settled.route_ms):.1f} / {against:.1f} ms)",
            ratio <= 0.3,
        )
