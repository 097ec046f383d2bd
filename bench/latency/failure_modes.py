"""Failure modes at 100k chunks: one failure-modes request over K failed sessions (K = 100,
200, 500, 1000), beside the same sessions asked one similarSessions request each.

    python -m bench.latency.failure_modes [--rounds 5] [--sizes 100,200,500,1000] [--fresh]

The table is the latency benchmark's world (bench/latency/corpus.py: Zipf accounts of
clustered topics, loaded by COPY, HNSW indexes built as the product builds them), 75k chunks
of it, and one more account of 25k chunks in 1,500 short sessions over 180 days (the
largest account, on its own index): its newest K sessions are marked failed in turn. Kept in
database fm_100k (reused when already loaded). Both sides go through the app in process
(httpx on ASGI), one request at a time; the settings' defaults but no rate limit and a
comparison budget of 60 s, so that a slow request is measured rather than cut short (its
timed-out answers are counted too under the default budget). Writes
bench/results/failure-modes-100k.md."""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
import time
import uuid
from typing import Any

import httpx
import numpy as np
import sqlalchemy as sa
from sqlalchemy.ext.asyncio import AsyncEngine

from bench.common.paths import RESULTS
from bench.common.timing import p50, pct
from bench.latency.corpus import Account, Corpus
from bench.latency.database import prepare
from config.logs import configure_logging
from config.settings import Settings
from data.engine import make_engine
from data.server import resolve_url
from similar_sessions.app import create_app

DATABASE = "fm_100k"
FAILURES_CHUNKS, FAILURES_LONGEST = 25_000, 40
SIZES = (100, 200, 500, 1000)
WINDOW_DAYS = 150
OUT = RESULTS / "failure-modes-100k.md"
QUERY = """query($w: Int!) { failureModes(windowDays: $w, limit: 10) {
  sessions compared groupCount degraded { reasons }
  groups { size isNew representative { id } members(first: 10) { nodes { runtimeSessionId } } }
} }"""
SIMILAR = """query($id: UUID!, $w: Int!) { runtimeSession(id: $id) {
  similarSessions(windowDays: $w, status: ["failed"], limit: 10) {
    degraded { reasons } results { runtimeSessionId similarity } } } }"""


def corpus() -> tuple[Corpus, Account]:
    """The latency world's 75k chunks and the failures account beside them: 100k in all."""
    planned = Corpus.plan(100_000 - FAILURES_CHUNKS)
    rng = np.random.default_rng(28)
    failures = Account(
        uuid.UUID(bytes=rng.bytes(16), version=4),
        "failures-000",
        "sk-bench-failures-28",
        FAILURES_CHUNKS,
        FAILURES_LONGEST,
    )
    return Corpus([*planned.accounts, failures], planned.seed, 100_000), failures


async def mark_failed(engine: AsyncEngine, account: Account, newest: int) -> list[uuid.UUID]:
    """The account's newest `newest` sessions failed, the others completed; their ids."""
    async with engine.begin() as conn:
        await conn.execute(
            sa.text("UPDATE runtime_sessions SET status = 'completed' WHERE account_id = :a"),
            {"a": account.id},
        )
        rows = await conn.execute(
            sa.text(
                "UPDATE runtime_sessions SET status = 'failed' WHERE account_id = :a AND id IN "
                "(SELECT id FROM runtime_sessions WHERE account_id = :a "
                "ORDER BY started_at DESC, id DESC LIMIT :n) RETURNING id"
            ),
            {"a": account.id, "n": newest},
        )
        return [r[0] for r in rows]


async def post(
    http: httpx.AsyncClient, key: str, query: str, **variables: Any
) -> tuple[float, Any]:
    started = time.perf_counter()
    answer = await http.post(
        "/graphql",
        json={"query": query, "variables": variables},
        headers={"authorization": f"Bearer {key}"},
    )
    ms = (time.perf_counter() - started) * 1000
    answer.raise_for_status()
    body = answer.json()
    if body.get("errors"):
        raise RuntimeError(body["errors"])
    return ms, body["data"]


async def measure(
    http: httpx.AsyncClient, key: str, ids: list[uuid.UUID], rounds: int
) -> dict[str, Any]:
    """The failure-modes request `rounds` times (after one untimed), then each of the first
    200 failed sessions asked alone, `rounds` times over."""
    await post(http, key, QUERY, w=WINDOW_DAYS)
    grouped = []
    for _ in range(rounds):
        ms, data = await post(http, key, QUERY, w=WINDOW_DAYS)
        grouped.append((ms, data["failureModes"]))
    singles: list[float] = []
    timed_out = 0
    for _ in range(rounds if len(ids) == 200 else 0):
        for sid in ids[:200]:
            ms, data = await post(http, key, SIMILAR, id=str(sid), w=WINDOW_DAYS)
            reasons = data["runtimeSession"]["similarSessions"]["degraded"]["reasons"]
            timed_out += "SIMILAR_COMPARISON_TIMED_OUT" in reasons
            singles.append(ms)
    last = grouped[-1][1]
    return {
        "sessions": len(ids),
        "p50": p50([ms for ms, _ in grouped]),
        "max": max(ms for ms, _ in grouped),
        "groups": last["groupCount"],
        "compared": last["compared"],
        "reasons": sorted({r for _, a in grouped for r in a["degraded"]["reasons"]}),
        "sizes": [g["size"] for g in last["groups"]],
        "single_p50": p50(singles),
        "single_p90": pct(singles, 90),
        "single_total": sum(singles) / rounds if singles else float("nan"),
        "single_timed_out": timed_out,
    }


async def run(args: argparse.Namespace) -> None:
    settings = Settings.from_env()
    server = resolve_url(settings.database_url, settings.data_dir)
    world, failures = corpus()
    url, meta = await prepare(server, DATABASE, world, settings.exact_scan_max_chunks, args.fresh)
    engine = make_engine(url, pool_size=4, statement_timeout_ms=120_000)
    rows: list[dict[str, Any]] = []
    try:
        for budget_ms in (60_000, settings.comparison_timeout_ms):
            tuned = settings.model_copy(
                update={
                    "rate_limit": None,
                    "concurrency_limit": 0,
                    "time_share_percent": 100,
                    "comparison_timeout_ms": budget_ms,
                    "statement_timeout_ms": max(budget_ms, settings.statement_timeout_ms),
                    "failure_modes_sessions": max(args.sizes),
                    "database_url": url,
                }
            )
            app = create_app(tuned, engine=engine, run_migrations=False)
            transport = httpx.ASGITransport(app=app)
            async with (
                app.router.lifespan_context(app),
                httpx.AsyncClient(
                    transport=transport, base_url="http://bench", timeout=300
                ) as http,
            ):
                for size in args.sizes:
                    ids = await mark_failed(engine, failures, size)
                    row = await measure(http, failures.key, ids, args.rounds)
                    rows.append({"budget_ms": budget_ms, **row})
                    print(row, file=sys.stderr)
    finally:
        await engine.dispose()
    report(rows, meta, args)


def report(rows: list[dict[str, Any]], meta: dict[str, Any], args: argparse.Namespace) -> None:
    lines = [
        "# Failure modes at 100k chunks",
        "",
        f"`python -m bench.latency.failure_modes {' '.join(sys.argv[1:])}` on {os.cpu_count()} "
        f"cores (shared), database {DATABASE} loaded {meta.get('loaded_at', '?')}; the failures "
        f"account: {FAILURES_CHUNKS:,} chunks in short sessions over 180 days, window "
        f"{WINDOW_DAYS} days, {args.rounds} rounds; milliseconds, in process.",
        "",
        "| comparison budget | failed sessions | failure modes p50 | max | groups (sizes of the "
        "first 10) | reasons | one similarSessions each: p50 | p90 | all 200, one after another |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        single = (
            f"{r['single_p50']:.0f} | {r['single_p90']:.0f} | {r['single_total']:.0f}"
            if r["sessions"] == 200
            else "| |"
        )
        lines.append(
            f"| {r['budget_ms']:,} | {r['sessions']} | {r['p50']:.0f} | {r['max']:.0f} | "
            f"{r['groups']} ({', '.join(map(str, r['sizes']))}) | "
            f"{', '.join(r['reasons']) or '-'} | {single} |"
        )
    OUT.write_text("\n".join(lines) + "\n", encoding="utf-8")
    print("\n".join(lines))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.latency.failure_modes")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument(
        "--sizes",
        type=lambda v: [int(n) for n in v.split(",")],
        default=list(SIZES),
        help="failed sessions per request, comma-separated (200 is also asked one at a time)",
    )
    parser.add_argument("--fresh", action="store_true", help="load the table again")
    args = parser.parse_args(argv)
    configure_logging("WARNING")
    asyncio.run(run(args))
    return 0


if __name__ == "__main__":
    sys.exit(main())
