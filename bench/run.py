"""The benchmark: `python -m bench.run --size 100k` (or 1m). Loads (or reuses) the corpus
in database bench_<size> on the embedded server, measures side by side in one run, and
writes bench/results/perf-<size>.md. Never part of the test run."""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
import uuid
from typing import Any

import httpx
import numpy as np
import sqlalchemy as sa
from sqlalchemy.ext.asyncio import AsyncEngine

from bench.corpus import Corpus
from bench.features import FeatureSections
from bench.latency import LatencySections
from bench.layout import LayoutSections
from bench.load import IDENTITY, index_options, prepare, sessions_of
from bench.loops import ensure_loop_in_table
from bench.loopsections import LoopSections
from bench.measure import (
    ROOT,
    SIZES,
    LeanClient,
    p50,
    probes_of,
    served,
    start_server,
    timed,
)
from bench.pages import PageSections
from bench.plans import PlanSections
from config.logs import configure_logging
from config.settings import Settings
from data.account_indexes import account_index_name, ensure_account_index, valid_account_index
from data.engine import make_engine
from data.model_catalog import ModelCatalog
from data.server import resolve_url
from resolvers.lookup_path import LookupPath
from resolvers.tuning import Tuning


class Bench(
    LatencySections, LayoutSections, PlanSections, PageSections, FeatureSections, LoopSections
):
    def __init__(self, args: argparse.Namespace) -> None:
        self.args = args
        self.size = SIZES[args.size]
        self.size_name, self.rounds, self.page_rounds = args.size, args.rounds, args.page_rounds
        settings = Settings.from_env()
        self.server = resolve_url(settings.database_url, settings.data_dir)
        self.tuning = Tuning(
            exact_scan_max_chunks=args.exact_max,
            ef_search=args.ef_search,
            overfetch=args.overfetch,
            comparison_timeout_ms=60_000,
            verify_timeout_ms=args.verify_timeout_ms,
        )
        self.out: list[str] = []
        self.targets = []
        self.rng = np.random.default_rng(11)

    def say(self, line: str = "") -> None:
        print(line)
        self.out.append(line)

    async def run(self) -> None:
        corpus = Corpus.plan(self.size)
        database = f"bench_{self.args.size}"
        url, meta = await prepare(
            self.server, database, corpus, self.tuning.exact_scan_max_chunks, self.args.fresh
        )
        chat = next(a for a in corpus.accounts if a.name.startswith("chat"))
        by_size = sorted((a for a in corpus.accounts if a is not chat), key=lambda a: a.size)
        largest, smallest = by_size[-1], by_size[0]
        loop = await ensure_loop_in_table(url, largest.id, corpus.total)
        engine = make_engine(url, pool_size=4, statement_timeout_ms=120_000)
        # in-process comparisons run as the server's do: on connections opened with the
        # comparison's settings (no SET per comparison)
        self.comparisons = make_engine(url, pool_size=2, comparison=self.tuning.comparison_settings)
        self.catalog = ModelCatalog()  # process-wide, as the server's
        sessions = await sessions_of(engine)
        sizes = {str(a.id): a.size for a in corpus.accounts}
        sizes[str(largest.id)] += loop["chunks"]
        built = await index_options(engine, account_index_name(largest.id, IDENTITY))
        medium = min(by_size, key=lambda a: abs(np.log(a.size) - np.log(5_000)))
        picks = [("small", smallest), ("medium", medium), ("largest", largest)]
        log_path = ROOT / "bench" / "results" / f"server-{self.args.size}.log"
        proc, base = start_server(url, self.tuning, log_path)
        self.say(f"# Similar sessions benchmark, {self.args.size} chunks")
        self.say()
        self.say(
            f"`{' '.join(['python -m bench.run', *sys.argv[1:]])}` on {os.cpu_count()} cores, "
            f"PostgreSQL embedded, pgvector 0.8; {len(by_size)} accounts (Zipf, "
            f"{smallest.size} to {largest.size} chunks) and one of {chat.size} chunks in "
            f"{len(sessions[str(chat.id)])} short sessions, "
            f"{sum(len(v) for v in sessions.values())} sessions, 384-d, "
            f"exact scan up to {self.tuning.exact_scan_max_chunks} chunks, "
            f"ef_search {self.tuning.ef_search}, over-fetch {self.tuning.overfetch}, exact check "
            f"of unsure lookups within {self.tuning.verify_timeout_ms} ms, the largest account's "
            f"HNSW index built with {built}. "
            f"Loaded by COPY in {meta['copy_s']} s; shared model index built in "
            f"{meta['shared_index_s']} s. Medians of interleaved runs; ms."
        )
        self.say()
        try:
            http = LeanClient(base)
            async with httpx.AsyncClient(base_url=base, timeout=120) as other:
                figures = []
                for label, account in picks:
                    figures.append(
                        await self.account_figures(
                            engine, (http, other), label, account, sessions[str(account.id)], sizes
                        )
                    )
                self.table(figures)
                await self.loop_in_table(engine, largest, loop, sessions[str(largest.id)])
                await self.loop_scenarios(self.server, self.args.builds)
                if self.args.loops:
                    return await self.finish(proc, engine, log_path)
                await self.crossover(engine, by_size, sessions)
                await self.pages(http, largest, medium)
                await self.exact_pages(http, chat)
                await self.lookup_share(engine, largest, sessions[str(largest.id)])
                await self.features(engine, http, sessions, medium, largest)
                await self.stability(url, largest, sessions[str(largest.id)])
                await self.ef_sweep(engine, largest, sessions[str(largest.id)])
                await self.storage(engine, largest, sessions[str(largest.id)], meta)
                await self.partitions(engine, [a.id for a in by_size[-1:] + by_size[:8]])
        except BaseException:
            proc.terminate()
            await engine.dispose()
            await self.comparisons.dispose()
            raise
        await self.finish(proc, engine, log_path)

    async def finish(self, proc: Any, engine: AsyncEngine, log_path: Any) -> None:
        proc.terminate()
        proc.wait(timeout=10)
        await engine.dispose()
        await self.comparisons.dispose()
        self.say()
        self.report_targets()
        self.say(f"Every request's path is logged (`similar_sessions` lines in {log_path.name}).")
        suffix = "-loops" if self.args.loops else ""
        target = ROOT / "bench" / "results" / f"perf-{self.args.size}{suffix}.md"
        target.write_text("\n".join(self.out) + "\n")
        print(f"\nwritten to {target}")

    def report_targets(self) -> None:
        self.say("## Targets")
        self.say()
        self.say("| target | this run | met |")
        self.say("|---|---|---|")
        for name, figure, met in self.targets:
            self.say(f"| {name} | {figure} | {'yes' if met else 'no'} |")
        self.say()

    def sample(self, sessions: list[uuid.UUID], n: int) -> list[uuid.UUID]:
        if len(sessions) <= n:
            return list(sessions)
        return [sessions[i] for i in self.rng.choice(len(sessions), n, replace=False)]

    async def crossover(
        self, engine: AsyncEngine, by_size: list[Any], sessions: dict[str, list[uuid.UUID]]
    ) -> None:
        """Exact scan against an own index, SQL alone, on accounts of growing size; an own
        index is built for the sweep where the product has none, and dropped after it."""
        self.say("## Where the exact scan stops paying: SQL p50 by account size")
        self.say()
        self.say("| chunks | exact path | own index | exact / index |")
        self.say("|---|---|---|---|")
        wanted = [300, 600, 1000, 1500, 2500, 5000, 10_000]
        picks = sorted({min(by_size, key=lambda a, w=w: abs(a.size - w)).id for w in wanted})
        for account in sorted((a for a in by_size if a.id in picks), key=lambda a: a.size):
            temporary = None
            async with engine.begin() as conn:
                if await valid_account_index(conn, account.id, IDENTITY) is None:
                    built = await ensure_account_index(conn, account.id, IDENTITY)
                    temporary = None if built is None else built.index_name
            probes = [
                await probes_of(engine, account.id, sid)
                for sid in self.sample(sessions[str(account.id)], 8)
            ]
            probes = [p for p in probes if p.chunks]
            exact_ms, index_ms = [], []
            for _ in range(2):
                for p in probes:
                    exact_ms.append(
                        (await timed(lambda p=p: served(engine, p, LookupPath.EXACT, self.tuning)))[
                            0
                        ]
                    )
                    index_ms.append(
                        (
                            await timed(
                                lambda p=p: served(engine, p, LookupPath.ACCOUNT_INDEX, self.tuning)
                            )
                        )[0]
                    )
            if temporary is not None:
                async with engine.begin() as conn:
                    await conn.execute(sa.text(f"DROP INDEX {temporary}"))
                    await conn.execute(
                        sa.text("DELETE FROM account_model_indexes WHERE index_name = :n"),
                        {"n": temporary},
                    )
            self.say(
                f"| {account.size} | {p50(exact_ms):.1f} | {p50(index_ms):.1f} "
                f"| {p50(exact_ms) / p50(index_ms):.2f} |"
            )
        self.say()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--size", choices=sorted(SIZES), default="100k")
    parser.add_argument("--fresh", action="store_true", help="reload even when the database exists")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--page-rounds", type=int, default=4)
    defaults = Tuning()
    parser.add_argument("--exact-max", type=int, default=defaults.exact_scan_max_chunks)
    parser.add_argument("--ef-search", type=int, default=defaults.ef_search)
    parser.add_argument("--overfetch", type=int, default=defaults.overfetch)
    parser.add_argument("--verify-timeout-ms", type=int, default=defaults.verify_timeout_ms)
    parser.add_argument("--builds", type=int, default=3, help="index builds per loop account")
    parser.add_argument(
        "--loops", action="store_true", help="only the recall table and the loop sessions"
    )
    configure_logging("WARNING")
    asyncio.run(Bench(parser.parse_args()).run())


if __name__ == "__main__":
    main()
