"""A hybrid search's latency on the demo as `make run` loads it (the lexical model, MiniLM
beside it): every tau-bench description of every set (90 in the kept run: authored and held
out) searched in process through `searchSessions`' own code, idle and beside one CPU-bound
process, with each leg's time (the dense leg's includes embedding the text).

    python -m bench.search.demo_latency [--rounds 3]

The demo is loaded into its own database `ss_demo_latency` (kept: a later run reuses it)."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import statistics
import sys
from collections.abc import Sequence
from typing import Any

import asyncpg

from bench.common.databases import administer, with_database
from bench.common.load import busy_processes
from bench.quality import labelled
from bench.search.queries import query_sets
from config.logs import configure_logging
from config.settings import Settings
from data.engine import make_engine
from data.migrate import migrate
from data.server import resolve_url
from indexer import demo
from indexer.commands import config_from, load_demo
from indexer.embedders import Registry
from resolvers.arguments import SimilarArgs
from resolvers.comparison.legs import Leg
from resolvers.comparison.search import search_sessions
from resolvers.services import Services
from resolvers.tuning import Tuning

DATABASE = "ss_demo_latency"


def _quantile(values: Sequence[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


async def _rounds(services: Services, texts: Sequence[str], rounds: int) -> dict[str, list[float]]:
    times: dict[str, list[float]] = {"search": [], "lexical leg": [], "dense leg": []}
    for text in texts:  # one untimed round: the model and the plans warm
        await search_sessions(services, demo.DEMO_ACCOUNT_ID, text, SimilarArgs())
    for _ in range(rounds):
        for text in texts:
            result = await search_sessions(services, demo.DEMO_ACCOUNT_ID, text, SimilarArgs())
            times["search"].append(result.elapsed_ms)
            for leg in result.legs:
                name = "lexical leg" if leg.leg is Leg.LEXICAL else "dense leg"
                times[name].append(leg.elapsed_ms)
    return times


async def run(rounds: int) -> list[str]:
    settings = Settings.from_env()
    configure_logging("WARNING")
    server = resolve_url(settings.database_url, settings.data_dir)
    # A run before made it: the demo's load is an upsert, its indexing incremental.
    with contextlib.suppress(asyncpg.DuplicateDatabaseError):
        await administer(server, f'CREATE DATABASE "{DATABASE}"')
    engine = make_engine(with_database(server, DATABASE))
    try:
        await migrate(engine)
        registry = Registry()
        await load_demo(engine, config_from(settings, progress=False), registry, dense=True)
        services = Services(engine, Tuning(), embedders=registry)
        corpus = labelled.CORPORA["tau-bench"]()
        texts = [q.text for qs in query_sets("tau-bench", corpus).values() for q in qs]
        lines = [
            f"{len(texts)} descriptions x {rounds} rounds, server-side ms",
            "",
            "| when | what | p50 | p95 |",
            "|---|---|---|---|",
        ]
        for busy in (False, True):
            with busy_processes(int(busy)):
                times = await _rounds(services, texts, rounds)
            when = "beside one CPU-bound process" if busy else "idle"
            for what, values in times.items():
                lines.append(
                    f"| {when} | {what} | {statistics.median(values):.1f} "
                    f"| {_quantile(values, 0.95):.1f} |"
                )
        return lines
    finally:
        await engine.dispose()


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.search.demo_latency")
    parser.add_argument("--rounds", type=int, default=3)
    opts: Any = parser.parse_args(argv)
    print("\n".join(asyncio.run(run(opts.rounds))))
    return 0


if __name__ == "__main__":
    sys.exit(main())
