"""Benchmark sections of the features beyond the seed: a filtered comparison and a text
search beside the plain comparison."""

from __future__ import annotations

import uuid

import sqlalchemy as sa
from sqlalchemy.ext.asyncio import AsyncEngine

from bench.common.timing import clocked, p50
from bench.latency.corpus import Account
from bench.latency.report import Report
from bench.latency.server import LeanClient

FAILED_SHARE = "substr(md5(id::text), 1, 1) IN ('0', '1')"  # an eighth of the sessions
SEARCH_TEXT = "the deploy failed again: migration lock timeout on the orders table"


async def features(
    report: Report,
    engine: AsyncEngine,
    http: LeanClient,
    sessions: dict[str, list[uuid.UUID]],
    *accounts: Account,
) -> None:
    async with engine.begin() as conn:  # idempotent: the same sessions every run
        await conn.execute(
            sa.text(f"UPDATE runtime_sessions SET status = 'failed' WHERE {FAILED_SHARE}")
        )
    report.say("## A filtered comparison and a text search beside the plain comparison")
    report.say()
    report.say("| account | plain p50 | status=failed p50 | search q= p50 | ratios |")
    report.say("|---|---|---|---|---|")
    for account in accounts:
        headers = {"authorization": f"Bearer {account.key}"}
        plain: list[float] = []
        failed: list[float] = []
        search: list[float] = []
        for sid in report.sample(sessions[str(account.id)], 12) * report.rounds:
            route = f"/api/v1/runtime-sessions/{sid}/similar"
            for params, into in (({}, plain), ({"status": "failed"}, failed)):
                ms, r = await clocked(http.get(route, params=params, headers=headers))
                assert r.status_code == 200, r.text
                into.append(ms)
            ms, r = await clocked(
                http.get(
                    "/api/v1/runtime-sessions/search",
                    params={"q": SEARCH_TEXT},
                    headers=headers,
                )
            )
            assert r.status_code == 200, r.text
            search.append(ms)
        report.say(
            f"| {account.name} ({account.size} chunks) | {p50(plain):.1f} "
            f"| {p50(failed):.1f} | {p50(search):.1f} "
            f"| {p50(failed) / p50(plain):.2f} / {p50(search) / p50(plain):.2f} |"
        )
    report.say()
    report.say(
        "REST routes over HTTP, limit 5; an eighth of the sessions marked failed. The "
        "bench's vectors are synthetic (`local:hash-384@384`, a model no embedder serves), "
        "so the search is answered `search_text_not_embedded` before any lookup: its "
        "column measures that refusal, not a search (a search's lookup is one probe of "
        "the comparison's first statement, `data/comparison_sql.py`)."
    )
    report.say()
