"""Benchmark sections of GraphQL pages: a page of 50 sessions with their similar sessions in
one request, against the same 50 comparisons asked one by one, on the approximate and the
exact path; and the share of the first statement in a batch of 50."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from sqlalchemy.ext.asyncio import AsyncEngine

from bench.common.routes import planned_route
from bench.common.timing import clocked, p50
from bench.latency.corpus import Account
from bench.latency.report import Report
from bench.latency.server import LeanClient
from data import comparison
from data.account_snapshot import read_snapshot
from resolvers.arguments import SimilarArgs
from resolvers.comparison.phases import SimilarKey, batch_of, compare_sessions
from resolvers.comparison.state import NOT_NARROWED
from resolvers.loaders import parts
from resolvers.rules.lookup_plan import Caller, plan
from resolvers.tuning import Tuning

PAGE_QUERY = """query Page($first: Int!) { runtimeSessions(first: $first) { nodes { id
  similarSessions(limit: 10) { results { runtimeSessionId score } } } } }"""
ONE_QUERY = """query One($id: UUID!) { runtimeSession(id: $id) {
  similarSessions(limit: 10) { results { runtimeSessionId score } } } }"""


@dataclass
class PageTimes:
    """Per round (ms): the page in one request, its sessions as 50 REST requests, and as 50
    one-session GraphQL requests (when asked)."""

    pages: list[float] = field(default_factory=list)
    rests: list[float] = field(default_factory=list)
    ones: list[float] = field(default_factory=list)
    ids: list[str] = field(default_factory=list)  # the page's sessions

    @property
    def ratio(self) -> float:
        return p50(self.pages) / p50(self.rests)


async def pages(report: Report, http: LeanClient, *accounts: Account) -> None:
    """Accounts on the approximate path: the page, 50 REST and 50 GraphQL requests."""
    report.say("## A GraphQL page of 50 sessions with similarSessions vs 50 requests")
    report.say()
    report.say(
        "| account | page of 50 (1 request) | 50 REST requests | 50 GraphQL requests | ratio |"
    )
    report.say("|---|---|---|---|---|")
    for account in accounts:
        times = await page_against_requests(
            http, account, report.page_rounds, one_by_one_graphql=True
        )
        report.say(
            f"| {account.name} ({account.size} chunks) | {p50(times.pages):.0f} "
            f"| {p50(times.rests):.0f} | {p50(times.ones):.0f} | {times.ratio:.2f} |"
        )
        report.target(
            f"page of 50 within 0.7x of 50 requests, approximate path ({account.name})",
            f"{times.ratio:.2f}",
            times.ratio <= 0.7,
        )
    report.say()


async def exact_pages(report: Report, http: LeanClient, account: Account) -> None:
    """A page of 50 against 50 requests on an account the product puts on the exact
    path (its comparable chunks under the exact-scan size)."""
    # a round costs under a second here: more of them than --page-rounds, whose medians of
    # three moved this ratio between 0.30 and 0.53 from one run to the next
    times = await page_against_requests(http, account, report.page_rounds * 5)
    report.say(
        f"On the exact path ({account.name}, {account.size} chunks in short sessions): "
        f"page of 50 {p50(times.pages):.0f} ms, 50 REST requests {p50(times.rests):.0f} ms, "
        f"ratio {times.ratio:.2f}."
    )
    report.say()
    report.target(
        "page of 50 within 0.3x of 50 requests, exact path",
        f"{times.ratio:.2f}",
        times.ratio <= 0.3,
    )


async def page_against_requests(
    http: LeanClient,
    account: Account,
    rounds: int,
    one_by_one_graphql: bool = False,
    size: int = 50,
) -> PageTimes:
    """Rounds of the page of `size` sessions in one GraphQL request against its sessions as
    many REST requests (and one-session GraphQL requests), after one untimed page that
    names them.
    Which side goes first alternates, so that neither is always the one to meet the
    buffers cold: the page always went first before."""
    headers = {"authorization": f"Bearer {account.key}"}
    page_body = {"query": PAGE_QUERY, "variables": {"first": size}}

    async def page() -> list[str]:
        body = (await http.post("/graphql", json=page_body, headers=headers)).json()
        assert "errors" not in body, body
        return [n["id"] for n in body["data"]["runtimeSessions"]["nodes"]]

    async def rests() -> None:
        for sid in ids:
            r = await http.get(
                f"/api/v1/runtime-sessions/{sid}/similar",
                params={"limit": 10},
                headers=headers,
            )
            assert r.status_code == 200, r.text

    async def ones() -> None:
        for sid in ids:
            one = {"query": ONE_QUERY, "variables": {"id": sid}}
            r = await http.post("/graphql", json=one, headers=headers)
            assert "errors" not in r.json(), r.text

    ids = await page()
    times = PageTimes(ids=ids)
    sides: list[tuple[Callable[[], Awaitable[Any]], list[float]]] = [
        (page, times.pages),
        (rests, times.rests),
    ]
    if one_by_one_graphql:
        sides.append((ones, times.ones))
    for round_ in range(rounds):
        for side, into in sides if round_ % 2 == 0 else sides[::-1]:
            into.append((await clocked(side()))[0])
    return times


async def lookup_share(
    report: Report, engine: AsyncEngine, account: Account, sessions: list[uuid.UUID]
) -> None:
    """In a batch of 50 comparisons, the share of the first statement (the probe lookups)."""
    ids = report.sample(sessions, 50)
    keys = [(uuid.UUID(str(s)), SimilarArgs(limit=10), NOT_NARROWED) for s in ids]
    whole, first = [], []
    for _ in range(report.page_rounds):
        async with comparison.reading(engine) as conn:
            ms, _ = await clocked(compare_sessions(conn, account.id, keys, report.tuning))
            whole.append(ms)
        models = await _models(engine, account.id)
        ms, _ = await clocked(first_statement(engine, account.id, keys, models, report.tuning))
        first.append(ms)
    report.target(
        "share of the HNSW probe lookups in a page (reported)",
        f"{p50(first) / p50(whole):.0%}",
        True,
    )
    report.say(
        f"In-process, 50 comparisons of {account.name} ({account.size} chunks) in one "
        f"batch: {p50(whole):.0f} ms, of which the first statement (its 400 HNSW probe "
        f"lookups) {p50(first):.0f} ms ({p50(first) / p50(whole):.0%})."
    )
    report.say()


@dataclass
class LookupsAlone:
    """Per round (ms): a page's first statements alone (its probes' HNSW lookups, nothing
    else), its sessions one by one on one connection, and its parts at once, each on its
    own connection, as the page cuts its batch (resolvers/loaders.py `parts`)."""

    one_by_one: list[float] = field(default_factory=list)
    at_once: list[float] = field(default_factory=list)

    @property
    def ratio(self) -> float:
        """The lowest page / requests ratio the lookups allow: what a page can save on the
        cores it has, when nothing but its lookups cost anything."""
        return p50(self.at_once) / p50(self.one_by_one)


async def lookups_alone(
    engine: AsyncEngine, account_id: uuid.UUID, ids: Sequence[str], tuning: Tuning, rounds: int
) -> LookupsAlone:
    """The floor of a page against its requests on this machine: the page's first
    statements, one session at a time and then in the page's parts at once (`engine`: the
    comparisons' connections, as many as the page's parts), after an untimed round."""
    keys = [(uuid.UUID(s), SimilarArgs(limit=10), NOT_NARROWED) for s in ids]
    models = await _models(engine, account_id)

    async def one_by_one() -> None:
        for key in keys:
            await first_statement(engine, account_id, [key], models, tuning)

    async def at_once() -> None:
        split = parts(keys, tuning.page_connections)
        statements = [first_statement(engine, account_id, p, models, tuning) for p in split]
        await asyncio.gather(*statements)

    alone = LookupsAlone()
    sides = [(one_by_one, alone.one_by_one), (at_once, alone.at_once)]
    for round_ in range(rounds + 1):  # which goes first alternates; the first is untimed
        for side, into in sides if round_ % 2 == 0 else sides[::-1]:
            ms, _ = await clocked(side())
            if round_:
                into.append(ms)
    return alone


async def _models(engine: AsyncEngine, account_id: uuid.UUID) -> Any:
    async with engine.connect() as conn:
        return (await read_snapshot(conn, account_id, 0)).models


async def first_statement(
    engine: AsyncEngine,
    account_id: uuid.UUID,
    keys: Sequence[SimilarKey],
    models: Any,
    tuning: Tuning,
) -> None:
    """The comparison's first statement alone for these keys (every probe's lookup), on a
    connection of `engine` configured as the comparison's."""
    batch = batch_of(account_id, keys, datetime.now(UTC))
    limits = plan(Caller.COMPARISON, tuning).limits()
    async with engine.connect() as conn:
        route = await planned_route(conn, account_id, tuning)
        await comparison.ensure_configured(conn, tuning.comparison_settings)
        asks = [c.ask for c in batch.comparisons]
        await comparison.look_up(conn, account_id, asks, models, limits, route)
