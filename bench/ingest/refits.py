"""The indexer's memory over repeated lexical fits (issue 55): whether a refit's step in RSS
comes again at every fit, or once in a process.

    python -m bench.ingest.refits [--fits 4]

Fits the stream account of bench.ingest's database (ss_bench_ingest: run `python -m
bench.ingest` first) `--fits` times in this process, as `index --watch` does (glibc's malloc
and the heap settings `serve` gives its indexer; the fit's embedder kept, the one before it
let go), and prints the RSS before and after each."""

from __future__ import annotations

import argparse
import asyncio
import gc
import sys
import time

from bench.common.databases import with_database
from bench.ingest.world import DATABASE, STREAM_ACCOUNT
from config import heap
from config.settings import Settings
from data.engine import make_engine
from data.server import resolve_url
from indexer.commands import config_from, registry_for
from indexer.embedders import Embedder
from indexer.fitting import built_fit


def rss_mb() -> int:
    with open("/proc/self/status", encoding="ascii") as status:
        line = next(line for line in status if line.startswith("VmRSS"))
    return int(line.split()[1]) // 1024


async def fits(count: int) -> None:
    settings = Settings.from_env()
    url = with_database(resolve_url(settings.database_url, settings.data_dir), DATABASE)
    engine = make_engine(url, statement_timeout_ms=0)
    config, registry = config_from(settings, progress=False), registry_for(settings)
    print(f"before: RSS {rss_mb()} MB", flush=True)
    kept: Embedder | None = None
    try:
        for n in range(1, count + 1):
            started = time.perf_counter()
            fit = await built_fit(
                engine, STREAM_ACCOUNT, config.template_min_sessions, config.repeat
            )
            kept = registry.fitted(fit)  # the one before it let go
            del fit
            gc.collect()
            seconds = time.perf_counter() - started
            print(f"fit {n}: {seconds:.1f} s, RSS {rss_mb()} MB", flush=True)
    finally:
        await engine.dispose()
    assert kept is not None


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.ingest.refits", description=__doc__)
    parser.add_argument("--fits", type=int, default=4)
    args = parser.parse_args(argv)
    if argv is None and (again := heap.restart()) is not None:
        again.run()  # under glibc's malloc, as the indexer runs (config/heap.py)
    heap.tune()
    asyncio.run(fits(args.fits))
    return 0


if __name__ == "__main__":
    sys.exit(main())
