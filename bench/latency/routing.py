"""Whether routing an account to the exact path pays on real sessions (issue #29): the
coding-agents corpus under the lexical model, as `python -m bench.quality` left it (4,702
chunks, past the exact-scan size, on its own index), each sampled session compared in process
three ways, alternating: the approximate path with nothing learned (its lookups checked by an
exact pass when they cannot vouch), the process's memory after one comparison (routed to the
exact path when most lookups needed the check), and the exact path forced.

    python -m bench.quality && python -m bench.latency.routing [--sessions 60]"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import time
from collections import Counter
from collections.abc import Sequence
from dataclasses import replace
from uuid import UUID

import sqlalchemy as sa
from sqlalchemy.ext.asyncio import AsyncEngine

from bench.common.databases import with_database
from bench.quality import labelled
from config.settings import Settings
from data.comparison import reading
from data.engine import make_engine
from data.server import resolve_url
from resolvers.arguments import SimilarArgs
from resolvers.comparison.check_costs import CheckCosts
from resolvers.comparison.phases import compare_sessions
from resolvers.comparison.state import NOT_NARROWED
from resolvers.tuning import Tuning

DATABASE = "ss_quality_coding_agents"
EXACT = 1_000_000  # an exact-scan size past every account


async def timed(
    engine: AsyncEngine, account: UUID, session: UUID, tuning: Tuning, checks: CheckCosts
) -> tuple[float, str]:
    """One comparison's time (ms) and the path it took."""
    started = time.perf_counter()
    async with reading(engine) as conn:
        [answer] = await compare_sessions(
            conn, account, [(session, SimilarArgs(limit=10), NOT_NARROWED)], tuning, checks=checks
        )
    assert answer is not None
    return (time.perf_counter() - started) * 1000, str(answer.lookup_path)


async def run(count: int) -> None:
    settings = Settings.from_env()
    url = with_database(resolve_url(settings.database_url, settings.data_dir), DATABASE)
    engine = make_engine(url)
    corpus = labelled.CORPORA["coding-agents"]()
    account = corpus.account_id
    async with engine.connect() as conn:
        rows = await conn.execute(
            sa.text("SELECT id FROM runtime_sessions WHERE account_id = :a ORDER BY id LIMIT :n"),
            {"a": account, "n": count},
        )
        ids = [r[0] for r in rows]
    served = Tuning.of(settings)
    exact = replace(served, exact_scan_max_chunks=EXACT)
    remembered = CheckCosts()
    names = ("approximate, nothing learned", "routed", "exact forced")
    times: dict[str, list[float]] = {name: [] for name in names}
    paths: dict[str, Counter[str]] = {k: Counter() for k in times}
    for n, session in enumerate(ids):
        ways = [(names[0], served, CheckCosts()), (names[1], served, remembered)]
        ways.append((names[2], exact, CheckCosts()))
        for name, tuning, checks in ways if n % 2 == 0 else ways[::-1]:
            ms, path = await timed(engine, account, session, tuning, checks)
            times[name].append(ms)
            paths[name][path] += 1
    await engine.dispose()
    base = statistics.median(times["exact forced"])
    print("| way | paths | p50 ms | / exact forced |")
    print("|---|---|---|---|")
    for name, values in times.items():
        p50 = statistics.median(values)
        took = ", ".join(f"{path} {n}" for path, n in sorted(paths[name].items()))
        print(f"| {name} | {took} | {p50:.1f} | {p50 / base:.2f}x |")


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.latency.routing", description=__doc__)
    parser.add_argument("--sessions", type=int, default=60)
    asyncio.run(run(parser.parse_args(argv).sessions))
    return 0


if __name__ == "__main__":
    sys.exit(main())
