"""The benchmark: `python -m bench.run --size 100k` (or 1m). Loads (or reuses) the corpus
in database bench_<size> on the embedded server, measures side by side in one run, and
writes bench/results/perf-<size>.md (perf-loops-<size>.md, perf-tail-<size>.md and
perf-clustered.md for --loops, --tail and --clustered). Never part of the test run."""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import numpy as np
from sqlalchemy.ext.asyncio import AsyncEngine

from bench.common.paths import RESULTS, result
from bench.latency.accounts import InProcess, account_figures, table
from bench.latency.corpus import Account, Corpus
from bench.latency.crossover import crossover
from bench.latency.database import index_options, prepare, sessions_of
from bench.latency.features import features
from bench.latency.loop_sections import loop_in_table, loop_scenarios
from bench.latency.loops import ensure_loop_in_table
from bench.latency.pages import exact_pages, lookup_share, pages
from bench.latency.plans import ef_sweep, stability
from bench.latency.real_vectors import SAMPLED
from bench.latency.report import Report
from bench.latency.server import LeanClient, start_server
from bench.latency.storage import partitions, storage
from bench.latency.tail import at_scale
from bench.latency.vector_worlds import vector_worlds
from config.logs import configure_logging
from config.settings import Settings
from data.account_snapshot import Snapshots
from data.engine import lift_statement_budget, make_engine
from data.own_index_tails import merge_due
from data.repeats import mark_repeats
from data.server import resolve_url
from resolvers.tuning import Tuning

SIZES = {"100k": 100_000, "1m": 1_000_000, "20k": 20_000}


@dataclass(frozen=True, slots=True)
class Loaded:
    """The corpus as the run found it in its database."""

    url: str
    meta: dict[str, Any]  # what was measured while loading it
    chat: Account  # short chat-like sessions, on the exact path
    by_size: list[Account]  # the other accounts, smallest first
    loop: dict[str, Any]  # the loop session added to the largest
    sessions: dict[str, list[uuid.UUID]]  # by account id
    sizes: dict[str, int]  # chunks by account id, the loop's counted

    @property
    def largest(self) -> Account:
        return self.by_size[-1]

    @property
    def medium(self) -> Account:
        return min(self.by_size, key=lambda a: abs(np.log(a.size) - np.log(5_000)))

    def of(self, account: Account) -> list[uuid.UUID]:
        return self.sessions[str(account.id)]


async def run(args: argparse.Namespace) -> None:
    settings = Settings.from_env()
    server = resolve_url(settings.database_url, settings.data_dir)
    report = Report(tuning_of(args), args.size, args.rounds, args.page_rounds)
    if args.clustered:
        await clustered_only(args, report, server)
        return
    corpus = Corpus.plan(SIZES[args.size])
    exact_max = report.tuning.exact_scan_max_chunks
    database = f"{args.db_prefix}{args.size}"
    url, meta = await prepare(server, database, corpus, exact_max, args.fresh)
    engine = make_engine(url, pool_size=4, statement_timeout_ms=120_000)
    # in-process comparisons run as the server's do: on connections opened with the
    # comparison's settings (no SET per comparison)
    comparisons = make_engine(url, pool_size=2, comparison=report.tuning.comparison_settings)
    in_process = InProcess(comparisons, Snapshots())
    loaded = await survey(corpus, url, meta, engine, exact_max)
    built = await index_options(engine, loaded.largest.id)
    if args.tail:
        header(report, loaded, built)
        try:
            await at_scale(report, url, loaded.largest, args.size)
        finally:
            await engine.dispose()
            await comparisons.dispose()
        report.say_targets()
        report.write(result("perf-tail", args.size))
        return
    log_path = RESULTS / f"server-{args.size}.log"
    proc, base = start_server(url, report.tuning, log_path)
    header(report, loaded, built)
    try:
        await sections(args, report, server, loaded, engine, in_process, base)
    except BaseException:
        proc.terminate()
        await engine.dispose()
        await comparisons.dispose()
        raise
    proc.terminate()
    proc.wait(timeout=10)
    await engine.dispose()
    await comparisons.dispose()
    finish(args, report, log_path)


async def clustered_only(args: argparse.Namespace, report: Report, server: str) -> None:
    """Only the sections on clustered and real vectors (`--clustered`)."""
    tuning = report.tuning
    report.say("# Similar sessions benchmark on vectors like real ones (issue #29)")
    report.say()
    report.say(
        f"`{' '.join(['python -m bench.run', *sys.argv[1:]])}` on {os.cpu_count()} cores, "
        f"PostgreSQL embedded, pgvector 0.8, 384-d; exact scan up to "
        f"{tuning.exact_scan_max_chunks} chunks, ef_search {tuning.ef_search} (retry "
        f"{tuning.ef_search_retry}), over-fetch {tuning.overfetch}, exact check of unsure "
        f"lookups within {tuning.verify_timeout_ms} ms; HNSW indexes built with m=16, "
        f"ef_construction=200. Routes over HTTP on one keep-alive connection "
        f"(http.client), {args.rounds} rounds of {SAMPLED} sampled sessions per account after "
        "one untimed round; medians; ms."
    )
    report.say()
    await vector_worlds(report, server, args.db_prefix, models_of(args), args.fresh, args.only)
    report.say_targets()
    report.say(
        "Every request's path and extra work is logged (`similar_sessions`, "
        "`similar_sessions_widened`, `similar_sessions_verified` and `exact_check` lines in "
        "server-clustered.log and server-labelled.log)."
    )
    report.write(result("perf", "clustered"))


def models_of(args: argparse.Namespace) -> list[str]:
    """The models the labelled corpora are embedded by: lexical, and MiniLM when asked."""
    return ["lexical", "minilm"] if args.minilm else ["lexical"]


async def survey(
    corpus: Corpus, url: str, meta: dict[str, Any], engine: AsyncEngine, exact_max: int
) -> Loaded:
    """The accounts and sessions in the loaded database, the loop session added (once) and
    then as the indexer's pass leaves it: written past the largest account's index mark (its
    tail), its repeats marked (data/repeats.py), merged into the index when the tail is due
    (data/own_index_tails.merge_due),
    so that the lookups measured are those of an account the indexer has caught up with,
    not of a 5%-of-the-table tail scanned exactly beside the index."""
    chat = next(a for a in corpus.accounts if a.name.startswith("chat"))
    by_size = sorted((a for a in corpus.accounts if a is not chat), key=lambda a: a.size)
    loop = await ensure_loop_in_table(url, by_size[-1].id, corpus.total)
    async with engine.begin() as conn:  # the pass's last step: the loop's repeats marked
        await lift_statement_budget(conn)
        marked = await mark_repeats(conn, by_size[-1].id, [uuid.UUID(loop["session"])])
    if marked:
        print(f"  the loop's repeats marked: {marked} chunks")
    for made in await merge_due(engine, exact_max, [by_size[-1].id]):
        print(f"  loop merged into {made.index_name}: {made.chunks} chunks, {made.seconds:.0f} s")
    sizes = {str(a.id): a.size for a in corpus.accounts}
    sizes[str(by_size[-1].id)] += loop["chunks"]
    return Loaded(url, meta, chat, by_size, loop, await sessions_of(engine), sizes)


def header(report: Report, loaded: Loaded, built: str) -> None:
    tuning, smallest, largest, chat = report.tuning, loaded.by_size[0], loaded.largest, loaded.chat
    report.say(f"# Similar sessions benchmark, {report.size_name} chunks")
    report.say()
    report.say(
        f"`{' '.join(['python -m bench.run', *sys.argv[1:]])}` on {os.cpu_count()} cores, "
        f"PostgreSQL embedded, pgvector 0.8; {len(loaded.by_size)} accounts (Zipf, "
        f"{smallest.size} to {largest.size} chunks) and one of {chat.size} chunks in "
        f"{len(loaded.of(chat))} short sessions, "
        f"{sum(len(v) for v in loaded.sessions.values())} sessions, 384-d, "
        f"exact scan up to {tuning.exact_scan_max_chunks} chunks, "
        f"ef_search {tuning.ef_search}, over-fetch {tuning.overfetch}, exact check "
        f"of unsure lookups within {tuning.verify_timeout_ms} ms, the largest account's "
        f"HNSW index built with {built}. "
        f"Loaded by COPY in {loaded.meta['copy_s']} s; shared model index built in "
        f"{loaded.meta['shared_index_s']} s. Medians of interleaved runs; ms."
    )
    report.say()


async def sections(
    args: argparse.Namespace,
    report: Report,
    server: str,
    loaded: Loaded,
    engine: AsyncEngine,
    in_process: InProcess,
    base: str,
) -> None:
    """Every section of the report, in order (each section's sample follows the ones before)."""
    http = LeanClient(base)
    largest, medium, by_size = loaded.largest, loaded.medium, loaded.by_size
    async with httpx.AsyncClient(base_url=base, timeout=120) as other:
        figures = []
        for label, account in [("small", by_size[0]), ("medium", medium), ("largest", largest)]:
            sessions = loaded.of(account)
            figures.append(
                await account_figures(
                    report,
                    engine,
                    in_process,
                    (http, other),
                    label,
                    account,
                    sessions,
                    loaded.sizes,
                )
            )
        table(report, figures)
        await loop_in_table(report, engine, largest, loaded.loop, loaded.of(largest))
        await loop_scenarios(report, server, args.builds, f"{args.db_prefix}loops")
        if args.loops:
            return
        await crossover(report, engine, by_size, loaded.sessions)
        await pages(report, http, largest, medium)
        await exact_pages(report, http, loaded.chat)
        await lookup_share(report, engine, largest, loaded.of(largest))
        await features(report, engine, http, loaded.sessions, medium, largest)
        await stability(report, loaded.url, largest, loaded.of(largest))
        await ef_sweep(report, engine, largest, loaded.of(largest))
        await storage(report, engine, largest, loaded.of(largest), loaded.meta)
        await partitions(report, engine, [a.id for a in by_size[-1:] + by_size[:8]])
        await vector_worlds(report, server, args.db_prefix, models_of(args), args.fresh)


def finish(args: argparse.Namespace, report: Report, log_path: Path) -> None:
    report.say()
    report.say_targets()
    report.say(f"Every request's path is logged (`similar_sessions` lines in {log_path.name}).")
    report.write(result("perf-loops" if args.loops else "perf", args.size))


def tuning_of(args: argparse.Namespace) -> Tuning:
    return Tuning(
        exact_scan_max_chunks=args.exact_max,
        ef_search=args.ef_search,
        overfetch=args.overfetch,
        comparison_timeout_ms=60_000,
        verify_timeout_ms=args.verify_timeout_ms,
        page_connections=args.page_connections,
    )


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
    parser.add_argument("--page-connections", type=int, default=defaults.page_connections)
    parser.add_argument(
        "--only",
        action="append",
        default=[],
        help="with --clustered: only the accounts whose label contains this (repeatable)",
    )
    parser.add_argument("--builds", type=int, default=3, help="index builds per loop account")
    parser.add_argument(
        "--loops", action="store_true", help="only the recall table and the loop sessions"
    )
    parser.add_argument(
        "--tail",
        action="store_true",
        help="only the largest account by ef_search 100/200/400: p95 and its cause, lists "
        "against the exact path, a page of 50 (bench/results/perf-tail-<size>.md)",
    )
    parser.add_argument(
        "--clustered",
        action="store_true",
        help="only the clustered worlds and the labelled corpora (bench/results/perf-clustered.md)",
    )
    parser.add_argument(
        "--minilm",
        action="store_true",
        help="also embed the labelled corpora with MiniLM (slow: 3-6 chunks/s uncached)",
    )
    parser.add_argument(
        "--db-prefix", default="bench_", help="prefix of the run's database names (bench_)"
    )
    configure_logging("WARNING")
    asyncio.run(run(parser.parse_args()))


if __name__ == "__main__":
    main()
