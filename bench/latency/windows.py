"""Comparisons within `windowDays` on the largest 1M account, whose loop's repeats are out of
the graph: `python -m bench.latency.windows` (on the database `python -m bench.run --size 1m
--tail` leaves).

The loop's neighbour and `--sessions` sampled sessions, each compared in process without a
window and within each of `--days`: served (the configured path, the account's own index)
after one untimed run, and on the exact path; the served comparison's median and slowest
time, and how many lists equal the exact path's. A representative older than the window
stays a candidate while its latest repeat is within (data/repeats.py); how long that check
costs is what this measures beside the windowless figure. Never part of the test run."""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import time
import uuid
from collections.abc import Sequence

import sqlalchemy as sa
from sqlalchemy.ext.asyncio import AsyncEngine

from bench.common.databases import with_database
from bench.common.paths import result
from config.settings import Settings
from data.comparison import reading
from data.engine import make_engine
from data.server import resolve_url
from resolvers.arguments import SimilarArgs
from resolvers.comparison.phases import compare_sessions
from resolvers.comparison.state import NOT_NARROWED
from resolvers.tuning import Tuning

Listed = list[tuple[uuid.UUID, float, int]]


async def compared(
    engine: AsyncEngine, account: uuid.UUID, session: uuid.UUID, tuning: Tuning, days: int | None
) -> tuple[float, Listed]:
    """One comparison: its milliseconds and its list (session, score, matched)."""
    args = SimilarArgs() if days is None else SimilarArgs(window_days=days)
    async with reading(engine) as conn:
        started = time.perf_counter()
        [answer] = await compare_sessions(conn, account, [(session, args, NOT_NARROWED)], tuning)
        ms = (time.perf_counter() - started) * 1000
    assert answer is not None
    return ms, [(n.session.id, round(n.score, 9), n.matched_chunk_count) for n in answer.results]


async def run(database: str, sampled: int, windows: Sequence[int | None]) -> str:
    settings = Settings.from_env()
    url = with_database(resolve_url(settings.database_url, settings.data_dir), database)
    served, exact = Tuning(), Tuning(exact_scan_max_chunks=10**9)
    engine = make_engine(url, pool_size=2, comparison=served.comparison_settings)
    try:
        async with engine.connect() as conn:
            loop = json.loads(
                (
                    await conn.execute(sa.text("SELECT value FROM bench_meta WHERE key = 'loop'"))
                ).scalar_one()
            )
            account = (
                await conn.execute(
                    sa.text("SELECT account_id FROM runtime_sessions WHERE id = :s"),
                    {"s": loop["session"]},
                )
            ).scalar_one()
            sampled_ids = await conn.execute(
                sa.text(
                    "SELECT id FROM runtime_sessions WHERE account_id = :a "
                    "ORDER BY md5(id::text) LIMIT :n"
                ),
                {"a": account, "n": sampled},
            )
            sessions = [uuid.UUID(loop["near_session"]), *sampled_ids.scalars()]
        rows = []
        for days in windows:
            times, equal = [], 0
            for session in sessions:
                await compared(engine, account, session, served, days)  # untimed
                ms, listed = await compared(engine, account, session, served, days)
                _, exact_listed = await compared(engine, account, session, exact, days)
                times.append(ms)
                equal += listed == exact_listed
            rows.append(
                f"| {'none' if days is None else days} | {statistics.median(times):.1f} | "
                f"{max(times):.1f} | {equal} of {len(sessions)} |"
            )
    finally:
        await engine.dispose()
    return (
        "# Comparisons within windowDays, the loop's repeats out of the graph, at 1M\n\n"
        f"`python -m bench.latency.windows --sessions {sampled}` on the database "
        "`python -m bench.run --size 1m --tail` leaves; the largest account, the loop's "
        f"neighbour and {sampled} sampled sessions, in process, served at the configured "
        "path after one untimed run, lists against the exact path's. ms.\n\n"
        "| windowDays | served p50 | served max | lists equal to the exact path's |\n"
        "|---|---|---|---|\n" + "\n".join(rows) + "\n"
    )


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.latency.windows", description=__doc__)
    parser.add_argument("--database", default="bench_1m")
    parser.add_argument("--sessions", type=int, default=12, help="sessions sampled")
    parser.add_argument("--days", type=int, action="append", help="windows (30, 3650)")
    opts = parser.parse_args(argv)
    windows: list[int | None] = [None, *(opts.days or [30, 3650])]
    text = asyncio.run(run(opts.database, opts.sessions, windows))
    print(text)
    with open(result("windows", "1m"), "w", encoding="utf-8") as handle:
        handle.write(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
