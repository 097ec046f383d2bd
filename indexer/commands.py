"""What `similar-sessions index` and `similar-sessions demo` do, on an engine."""

from __future__ import annotations

import asyncio
import signal
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from datetime import UTC, datetime

from sqlalchemy.ext.asyncio import AsyncEngine

from config.settings import Settings
from data import slot_chunks
from data.sessions import sessions_by_id
from indexer import demo
from indexer.chunking import ChunkPolicy
from indexer.embedders import Registry
from indexer.passes import IndexerConfig, PassHook, PassReport
from indexer.providers import providers_for
from indexer.watching import watch
from indexer.worker import index_once
from observability.tracing import configure_tracing, trace_engine
from transfer.importing import import_lines


def config_from(settings: Settings, progress: bool | None = None) -> IndexerConfig:
    policy = ChunkPolicy(
        window_tokens=settings.chunk_tokens,
        overlap_turns=settings.chunk_overlap_turns,
        split_overlap_tokens=settings.split_overlap_tokens,
        tool_result_tokens=settings.tool_result_tokens,
        chunk_system_prompts=settings.chunk_system_prompts,
        role_labels=settings.chunk_role_labels,
    )
    return IndexerConfig(
        policy,
        settings.repeat_min_sessions,
        settings.embed_batch,
        progress,
        account_index_min_chunks=settings.exact_scan_max_chunks,
        max_attempts=settings.embed_max_attempts,
        repeat_min_share_percent=settings.repeat_min_share_percent,
        refit_growth_percent=settings.lexical_refit_growth_percent,
        refit_min_interval_s=settings.lexical_refit_min_interval_s,
        template_min_sessions=settings.template_min_sessions,
        session_idle_s=settings.session_idle_s,
    )


def registry_for(settings: Settings) -> Registry:
    """The built-in local embedders, and the providers for any model they serve."""
    return Registry(providers=providers_for(settings), kept=settings.embedders_kept)


def describe(report: PassReport) -> str:
    text = (
        f"{report.accounts} account(s): {report.sessions_chunked} session(s) chunked, "
        f"{report.chunks_written} chunk(s) written, {report.chunks_skipped} skipped as repeated, "
        f"{report.chunks_embedded} embedded in {report.batches} batch(es)"
    )
    if report.batches_failed:
        text += (
            f", {report.batches_failed} batch(es) failed by the provider "
            f"({report.chunks_failed} chunk(s) now marked failed)"
        )
    if report.zero_vectors_skipped:
        text += f", {report.zero_vectors_skipped} skipped for want of any feature"
    if report.vectors_stripped:
        text += f", {report.vectors_stripped} vector(s) of non-clear chunks removed"
    for account_id, reason in report.degraded.items():
        text += f"; account {account_id} degraded: {reason}"
    return text


async def run_index(
    engine: AsyncEngine,
    settings: Settings,
    keep_watching: bool,
    retry_failed: bool = False,
    hook: PassHook | None = None,
) -> int:
    """`index` (`--watch`: with the hook beside the passes: the alerts, given by the CLI)."""
    registry, config = registry_for(settings), config_from(settings)
    tracing = configure_tracing(settings)
    if tracing is not None:
        trace_engine(engine, tracing)
    if retry_failed:
        async with engine.begin() as conn:
            again = await slot_chunks.retry_failed(conn, None)
        print(f"{again} failed chunk(s) put back to pending", file=sys.stderr)
    if not settings.embeddings_enabled:
        print(
            "embeddings are turned off (SIMILAR_SESSIONS_EMBEDDINGS=false): nothing to do",
            file=sys.stderr,
        )
        return 0
    if not keep_watching:
        print(describe(await index_once(engine, registry, config)), file=sys.stderr)
        return 0
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    if settings.indexer_metrics_port is not None:
        from prometheus_client import start_http_server

        host, port = settings.indexer_metrics_host, settings.indexer_metrics_port
        start_http_server(port, addr=host)
        print(f"metrics on http://{host}:{port}/metrics", file=sys.stderr)
    print(
        f"indexing every {settings.index_interval_s}s, and as sessions are ingested; Ctrl-C stops",
        file=sys.stderr,
    )
    watching = replace(config, backlog_s=settings.index_backlog_s)
    await watch(engine, registry, watching, settings.index_interval_s, stop, hook)
    return 0


@dataclass(frozen=True, slots=True)
class DemoLoaded:
    sessions: int
    activity: int
    report: PassReport


def _quiet(_: str) -> None:
    """Says nothing: a load for a test or a benchmark."""


async def load_demo(
    engine: AsyncEngine,
    config: IndexerConfig,
    registry: Registry,
    now: datetime | None = None,
    dense: bool = False,
    say: Callable[[str], None] = _quiet,
) -> DemoLoaded:
    """Import the corpus as the demo account (an upsert: harmless again), then index it;
    `dense`: with all-MiniLM-L6-v2 beside the lexical model (the search's dense leg). A first load
    places the sessions over the days before `now`; later loads keep its times. `say` is told
    each step as it starts and ends."""
    import json

    corpus = demo.load_corpus()
    started = time.perf_counter()
    say(f"importing the demo corpus: {len(corpus)} tau-bench sessions")
    async with engine.begin() as conn:
        anchor = demo.first_session_id(corpus)
        loaded = (await sessions_by_id(conn, demo.DEMO_ACCOUNT_ID, [anchor])).get(anchor)
        first_at = (
            loaded.started_at
            if loaded is not None
            else demo.first_session_at(now or datetime.now(UTC))
        )
        model = demo.DENSE_MODEL if dense else None
        records = demo.records(corpus, first_at=first_at, dense=model)
        lines = [json.dumps(r) for r in records]
        imported = await import_lines(conn, str(demo.CORPUS), lines)
    say(f"imported in {time.perf_counter() - started:.1f} s; indexing: {_INDEXING[dense]}")
    started = time.perf_counter()
    report = await index_once(engine, registry, config, account_ids=[demo.DEMO_ACCOUNT_ID])
    say(f"indexed in {time.perf_counter() - started:.1f} s")
    return DemoLoaded(imported.lines["session"], imported.lines["activity"], report)


# What the demo's indexer pass does, said before it starts (a first one: the lexical model in
# seconds, MiniLM a minute or more, bench/results/search-indexing-demo.md).
_INDEXING = {
    False: "chunks, the lexical model fitted and its vectors (seconds)",
    True: "chunks, the lexical model fitted and its vectors (seconds), then all-MiniLM-L6-v2's "
    "(a first load: a minute or more on two cores)",
}


def demo_step(step: str) -> None:
    """A step of the demo's load on stderr, as it happens (the summary goes to stdout)."""
    print(f"demo: {step}", file=sys.stderr, flush=True)


async def run_demo(engine: AsyncEngine, settings: Settings, dense: bool = True) -> int:
    config, registry = config_from(settings), registry_for(settings)
    loaded = await load_demo(engine, config, registry, dense=dense, say=demo_step)
    some = demo.session_id(0, 0)
    print(
        f"demo account loaded: {loaded.sessions} tau-bench sessions, {loaded.activity} turns\n"
        f"indexed: {describe(loaded.report)}\n"
        f"API key (scope view_runtime_sessions): {demo.DEMO_API_KEY}\n"
        f"ingest key (scope ingest_runtime_sessions, POST /v1/traces): {demo.DEMO_INGEST_KEY}\n"
        f"a session to start from: {some}\n"
        "serve it with `similar-sessions serve [--port PORT]` (8000 by default), then, with\n"
        "PORT set to the port it serves on:\n"
        f"  curl -H 'Authorization: Bearer {demo.DEMO_API_KEY}' "
        f'"http://127.0.0.1:${{PORT:-8000}}/api/v1/runtime-sessions/{some}/similar"'
    )
    return 0
