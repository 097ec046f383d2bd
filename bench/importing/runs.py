"""The product's side of the import run: `similar-sessions import FILE` in a process of its
own, its wall time, CPU seconds and peak memory; and the file cut into parts."""

from __future__ import annotations

import asyncio
import json
import os
import resource
import statistics
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import sqlalchemy as sa

from bench.common.paths import checkout_env
from bench.importing.floor import ServerCpu
from data import comparison
from data.account_snapshot import Snapshots
from data.engine import make_engine
from data.migrate import migrate
from resolvers.arguments import SimilarArgs
from resolvers.comparison.phases import compare_sessions
from resolvers.comparison.state import NOT_NARROWED
from resolvers.tuning import Tuning

CLI = Path(sys.executable).with_name("similar-sessions")


@dataclass
class Run:
    wall_s: float
    cpu_s: float | None  # the import process and the server
    peak_rss_mib: float
    phases: dict[str, float]
    output: str
    chunks: int = 0  # chunk lines of the file (set for the parts)
    merge_s: float | None = None  # `merge-indexes` after it, as the indexer's pass would
    # comparisons in process, p50 ms: (served, exact path) with the tail, and served after
    # the merge
    tail_ms: tuple[float, float] | None = None
    merged_ms: float | None = None


async def _compared(url: str, sessions: int, rounds: int) -> tuple[float, float]:
    """The median ms of comparing `sessions` of the account's sessions (chosen by md5 of
    their ids) in process, as the route does (a comparison connection, one catalog), and of
    the exact path on the same sessions, interleaved, after a round that warms both."""
    engine = make_engine(url)
    catalog, served, exact = Snapshots(), Tuning(), Tuning(exact_scan_max_chunks=10**9)
    try:
        async with engine.connect() as conn:
            row = (await conn.execute(sa.text("SELECT account_id FROM accounts"))).first()
            assert row is not None, "the import wrote no account"
            ids = await conn.execute(
                sa.text(
                    "SELECT id FROM runtime_sessions WHERE account_id = :a "
                    "ORDER BY md5(id::text) LIMIT :n"
                ),
                {"a": row[0], "n": sessions},
            )
            chosen = [(row[0], s) for s in ids.scalars()]
        times: dict[bool, list[float]] = {True: [], False: []}
        for r in range(rounds + 1):
            for account, session in chosen:
                for is_exact, tuning in ((False, served), (True, exact)):
                    async with comparison.reading(engine) as conn:
                        started = time.perf_counter()
                        args = [(session, SimilarArgs(limit=10), NOT_NARROWED)]
                        await compare_sessions(conn, account, args, tuning, catalog)
                        if r:
                            times[is_exact].append((time.perf_counter() - started) * 1000)
    finally:
        await engine.dispose()
    return statistics.median(times[False]), statistics.median(times[True])


def compared(url: str, sessions: int = 24, rounds: int = 2) -> tuple[float, float]:
    return asyncio.run(_compared(url, sessions, rounds))


def merged(url: str) -> float:
    """`similar-sessions merge-indexes` in a process of its own (what the indexer does on its
    next pass for a due tail): its wall time."""
    env = checkout_env({**os.environ, "DATABASE_URL": url})
    started = time.perf_counter()
    done = subprocess.run([str(CLI), "merge-indexes"], env=env, capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(f"merge-indexes failed ({done.returncode}):\n{done.stderr[-3000:]}")
    return time.perf_counter() - started


def product(url: str, data_file: Path, cpu: ServerCpu) -> Run:
    """`similar-sessions import FILE` in a process of its own, default settings."""
    env = checkout_env({**os.environ, "DATABASE_URL": url, "SIMILAR_SESSIONS_LOG_LEVEL": "INFO"})
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    before, client_before, server_before = usage.ru_maxrss, _cpu(usage), cpu.seconds()
    started = time.perf_counter()
    done = subprocess.run(
        [str(CLI), "import", str(data_file)], env=env, capture_output=True, text=True
    )
    wall = time.perf_counter() - started
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    peak, server_after = usage.ru_maxrss, cpu.seconds()
    spent = None
    if server_after is not None and server_before is not None:
        spent = _cpu(usage) - client_before + server_after - server_before
    if done.returncode != 0:
        raise SystemExit(f"import failed ({done.returncode}):\n{done.stderr[-3000:]}")
    phases: dict[str, float] = {}
    for line in done.stderr.splitlines():
        if line.startswith("{") and '"imported"' in line:
            phases = json.loads(line).get("seconds", {})
    summary = [line for line in done.stderr.splitlines() if not line.startswith("{")]
    rss = max(peak, before) / 1024  # ru_maxrss is in KiB on Linux
    return Run(wall, spent, rss, phases, "\n".join(summary))


def _cpu(usage: resource.struct_rusage) -> float:
    return usage.ru_utime + usage.ru_stime


def migrate_db(url: str) -> None:
    async def run() -> None:
        engine = make_engine(url)
        try:
            await migrate(engine)
        finally:
            await engine.dispose()

    asyncio.run(run())


def split(data_file: Path, parts: int) -> list[tuple[Path, int]]:
    """The file cut into parts of about equal lines, in order (a session before its chunks):
    each part's path and its chunk lines."""
    lines = data_file.read_bytes().splitlines(keepends=True)
    size = -(-len(lines) // parts)
    out = []
    for n in range(parts):
        path = data_file.with_suffix(f".part{n}.jsonl")
        part = lines[n * size : (n + 1) * size]
        path.write_bytes(b"".join(part))
        out.append((path, sum(1 for line in part if line.startswith(b'{"type":"chunk"'))))
    return out
