"""Failure modes at 100k chunks: a question's first page, its later pages, and another
account's similarSessions beside it, over K failed sessions (K = 100, 200, 500, 1000).

    python -m bench.latency.failure_modes [--rounds 5] [--sizes 100,200,500,1000] [--fresh]

The table is the latency benchmark's world (bench/latency/corpus.py: Zipf accounts of
clustered topics, loaded by COPY, HNSW indexes built as the product builds them), 75k chunks
of it, and one more account of 25k chunks in 1,500 short sessions over 180 days (the
largest account, on its own index): its newest K sessions are marked failed in turn. Kept in
database fm_100k (reused when already loaded). Every request goes through the app in process
(httpx on ASGI) with the settings' defaults but no rate limit. Per size and round: the first
page (a new question: it groups), the next page of groups and a group's members (both
naming the first page's pin: served from the process's memo), and another account's
similarSessions, asked every 50 ms while the first page runs, beside the same asked idle, and
the longest the event loop was held meanwhile.
Writes bench/results/failure-modes-100k.md."""

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

from bench.common.paths import result
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
OUT = result("failure-modes", "100k")
QUERY = """query($w: Int!, $after: String) {
  failureModes(windowDays: $w, limit: 10, after: $after) {
  sessions compared groupCount asOf endCursor degraded { reasons }
  groups { size isNew representative { id } members(first: 10) { nodes { runtimeSessionId } } }
} }"""
MEMBERS = """query($w: Int!, $id: UUID!, $pin: String!, $after: String) {
  failureModes(windowDays: $w, containing: $id, asOf: $pin, limit: 1) {
    asOf degraded { reasons }
    groups { size members(first: 10, after: $after) { nodes { runtimeSessionId } endCursor } }
} }"""
SIMILAR = """query($id: UUID!) { runtimeSession(id: $id) {
  similarSessions(limit: 10) { degraded { reasons } results { runtimeSessionId similarity } } } }"""
POLL_S = 0.05


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


async def other_session(engine: AsyncEngine, failures: Account) -> tuple[str, uuid.UUID]:
    """Another account's key and one of its sessions with embedded passages: the second
    largest account, the one a noisy neighbour would hurt most after the failures account."""
    async with engine.connect() as conn:
        row = (
            await conn.execute(
                sa.text(
                    "SELECT c.account_id, c.runtime_session_id FROM session_chunks c "
                    "WHERE c.account_id <> :a AND c.embedding_state = 'embedded' "
                    "GROUP BY c.account_id, c.runtime_session_id "
                    "ORDER BY count(*) OVER (PARTITION BY c.account_id) DESC, "
                    "c.runtime_session_id LIMIT 1"
                ),
                {"a": failures.id},
            )
        ).one()
    world, _ = corpus()
    key = next(a.key for a in world.accounts if a.id == row[0])
    return key, row[1]


async def watched(
    http: httpx.AsyncClient, other: tuple[str, uuid.UUID], work: Any
) -> tuple[Any, list[float], float]:
    """`work`'s result, the other account's similarSessions times (asked every POLL_S seconds
    while it ran), and the longest the event loop was held meanwhile (ms: how late a 5 ms
    sleep woke, at worst)."""
    times: list[float] = []
    stalls: list[float] = []
    done = asyncio.Event()

    async def poll() -> None:
        while not done.is_set():
            ms, _ = await post(http, other[0], SIMILAR, id=str(other[1]))
            times.append(ms)
            await asyncio.sleep(POLL_S)

    async def lag() -> None:
        while not done.is_set():
            started = time.perf_counter()
            await asyncio.sleep(0.005)
            stalls.append((time.perf_counter() - started - 0.005) * 1000)

    watchers = [asyncio.create_task(poll()), asyncio.create_task(lag())]
    try:
        result = await work
    finally:
        done.set()
        await asyncio.gather(*watchers)
    return result, times, max(stalls, default=0.0)


async def measure(
    http: httpx.AsyncClient,
    key: str,
    other: tuple[str, uuid.UUID],
    ids: list[uuid.UUID],
    rounds: int,
) -> dict[str, Any]:
    """Per round: the first page (a new question), its next page and one group's members
    (from its pin), and the other account's similarSessions during the first page; then that
    one asked idle, as many times."""
    await post(http, key, QUERY, w=WINDOW_DAYS)  # untimed: plans and caches warm
    first: list[float] = []
    later: list[float] = []
    members: list[float] = []
    during: list[float] = []
    stalls: list[float] = []
    answer: dict[str, Any] = {}
    for _ in range(rounds):
        work = post(http, key, QUERY, w=WINDOW_DAYS)
        (ms, data), polled, stall = await watched(http, other, work)
        first.append(ms)
        during += polled
        stalls.append(stall)
        answer = data["failureModes"]
        if answer["endCursor"]:
            ms, next_page = await post(http, key, QUERY, w=WINDOW_DAYS, after=answer["endCursor"])
            later.append(ms)
            assert next_page["failureModes"]["asOf"] == answer["asOf"]
        biggest = answer["groups"][0] if answer["groups"] else None
        if biggest is not None:
            rep = biggest["representative"]["id"]
            ms, _ = await post(http, key, MEMBERS, w=WINDOW_DAYS, id=rep, pin=answer["asOf"])
            members.append(ms)
    idle = [(await post(http, other[0], SIMILAR, id=str(other[1])))[0] for _ in range(40)]
    return {
        "sessions": len(ids),
        "first_p50": p50(first),
        "first_max": max(first),
        "later_p50": p50(later) if later else float("nan"),
        "members_p50": p50(members) if members else float("nan"),
        "groups": answer.get("groupCount"),
        "compared": answer.get("compared"),
        "reasons": sorted(answer.get("degraded", {}).get("reasons", [])),
        "sizes": [g["size"] for g in answer.get("groups", [])],
        "other_idle_p50": p50(idle),
        "other_during_p50": p50(during) if during else float("nan"),
        "other_during_p95": pct(during, 95) if during else float("nan"),
        "other_during_n": len(during),
        "loop_stall_max": max(stalls, default=float("nan")),
    }


async def run(args: argparse.Namespace) -> None:
    settings = Settings.from_env()
    server = resolve_url(settings.database_url, settings.data_dir)
    world, failures = corpus()
    url, meta = await prepare(server, DATABASE, world, settings.exact_scan_max_chunks, args.fresh)
    engine = make_engine(url, pool_size=6, statement_timeout_ms=120_000)
    rows: list[dict[str, Any]] = []
    try:
        other = await other_session(engine, failures)
        tuned = settings.model_copy(
            update={
                "rate_limit": None,
                "account_rate_limit": None,
                "failure_modes_sessions": max(args.sizes),
                "database_url": url,
            }
        )
        app = create_app(tuned, engine=engine, run_migrations=False)
        transport = httpx.ASGITransport(app=app)
        async with (
            app.router.lifespan_context(app),
            httpx.AsyncClient(transport=transport, base_url="http://bench", timeout=300) as http,
        ):
            for size in args.sizes:
                ids = await mark_failed(engine, failures, size)
                row = await measure(http, failures.key, other, ids, args.rounds)
                rows.append(row)
                print(row, file=sys.stderr)
    finally:
        await engine.dispose()
    report(rows, meta, args)


# The same world's figures before one grouping per question (this machine, 2026-12-02, the
# previous rule and its 500 separate comparisons: every page grouped again).
BEFORE = {500: {"first_p50": 26506.0, "later_p50": 26506.0}}


def report(rows: list[dict[str, Any]], meta: dict[str, Any], args: argparse.Namespace) -> None:
    lines = [
        "# Failure modes at 100k chunks",
        "",
        f"`python -m bench.latency.failure_modes {' '.join(sys.argv[1:])}` on {os.cpu_count()} "
        f"cores, database {DATABASE} loaded {meta.get('loaded_at', '?')}; the failures "
        f"account: {FAILURES_CHUNKS:,} chunks in short sessions over 180 days, window "
        f"{WINDOW_DAYS} days, {args.rounds} rounds; milliseconds, in process. Later pages name "
        "the first page's pin (`after`, `asOf`). The other account's similarSessions is asked "
        f"every {POLL_S * 1000:.0f} ms while the first page runs, and 40 times idle.",
        "",
        "| failed sessions | first page p50 | max | next page p50 | members p50 | groups "
        "(sizes of the first 10) | reasons | other account idle p50 | during p50 | during p95 "
        "| loop held at most | before: first page / later page p50 |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        before = BEFORE.get(r["sessions"], {})
        shown = " / ".join(f"{before[k]:.0f}" for k in ("first_p50", "later_p50") if k in before)
        lines.append(
            f"| {r['sessions']} | {r['first_p50']:.0f} | {r['first_max']:.0f} | "
            f"{r['later_p50']:.0f} | {r['members_p50']:.0f} | "
            f"{r['groups']} ({', '.join(map(str, r['sizes']))}) | "
            f"{', '.join(r['reasons']) or '-'} | {r['other_idle_p50']:.0f} | "
            f"{r['other_during_p50']:.0f} | {r['other_during_p95']:.0f} | "
            f"{r['loop_stall_max']:.0f} | {shown or '-'} |"
        )
    lines += [
        "",
        "Before: `python -m bench.latency.failure_modes --rounds 2 --sizes 500` at the commit "
        "before one grouping per question (9050575), on this machine the same day: every page "
        "grouped the window again.",
    ]
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
