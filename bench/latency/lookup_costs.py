"""What the comparison's first statement costs on vectors like real ones, on its own (no
wider retry, no exact check): on the account's own index at several ef_search and over-fetch
values, against the same statement on the exact path, with the chunk recall of its lookups
against the one-pass exact scan and how many of them could vouch for their window."""

from __future__ import annotations

import uuid
from collections import Counter
from dataclasses import replace

import numpy as np
import sqlalchemy as sa
from sqlalchemy.ext.asyncio import AsyncEngine

from bench.common.routes import planned_route
from bench.common.timing import clocked, p50
from bench.latency.corpus import Account
from bench.latency.measure import Probe, exact, probes_of, recalls
from bench.latency.phase_times import doubt
from bench.latency.real_vectors import comparable_sessions
from bench.latency.report import Report
from data import comparison
from data.engine import make_engine
from data.lookups import Ask
from data.model_identity import ModelIdentity
from resolvers.rules.lookup_plan import Caller, plan
from resolvers.tuning import Tuning
from values.lookups import ComparisonSettings, Hit, Limits

# (ef_search, over-fetch): the defaults first, then less of each
SETTINGS = ((400, 100), (400, 25), (200, 100), (100, 100), (40, 40))
EXACT_PATH = 100_000_000


async def model_of(engine: AsyncEngine, account: uuid.UUID) -> ModelIdentity:
    """The model most of the account's comparable chunks were embedded with."""
    async with engine.connect() as conn:
        model = await conn.execute(
            sa.text(
                "SELECT embedding_model FROM session_chunks WHERE account_id = :a "
                "AND embedding_state = 'embedded' AND redaction_state = 'clear' "
                "GROUP BY 1 ORDER BY count(*) DESC LIMIT 1"
            ),
            {"a": account},
        )
        return ModelIdentity.parse(model.scalar_one())


async def first_statement(
    engine: AsyncEngine, probe: Probe, identity: ModelIdentity, limits: Limits, ef: int
) -> tuple[float, list[Hit], Counter[str]]:
    """The first statement alone for the probe's session: its ms, hits, and why each of its
    approximate lookups could (`vouched`) or could not vouch (the limits' exact-scan size
    forces the path)."""
    async with engine.connect() as conn:
        forcing = Tuning(exact_scan_max_chunks=limits.exact_scan_max_chunks)
        route = await planned_route(conn, probe.account, forcing)
        await comparison.configure_comparison(conn, ComparisonSettings(120_000, ef))
        ask = [Ask(0, probe.session)]
        ms, looked = await clocked(
            comparison.look_up(conn, probe.account, ask, [identity], limits, route)
        )
        await conn.rollback()
    found = looked.inventories[0]
    doubts: Counter[str] = Counter()
    hits: list[Hit] = []
    if found is not None:
        known = looked.paths.get(found.model or "")
        path = None if known is None else known.path
        for p in found.probes:
            hits += p.answer.hits
            if path is not None and path.approximate and p.lookup == p.number:
                doubts[doubt(p.answer.window, limits)] += 1
    return ms, hits, doubts


async def lookup_costs(report: Report, url: str, accounts: list[tuple[str, Account]]) -> None:
    report.say("### The first statement alone, by ef_search and over-fetch")
    report.say()
    report.say(
        "The comparison's first statement by itself (no wider retry, no exact check), for "
        "the sessions sampled above, on the account's own index at each setting and on the "
        "exact path; chunk recall@25 against the one-pass exact scan; medians of two rounds:"
    )
    report.say()
    report.say(
        "| account | ef_search | over-fetch | first statement p50 | / exact path's | "
        "chunk recall@25 (min) | lookups that could vouch |"
    )
    report.say("|---|---|---|---|---|---|---|")
    engine = make_engine(url, pool_size=2, statement_timeout_ms=120_000)
    try:
        for label, account in accounts:
            await _account_costs(report, engine, label, account)
    finally:
        await engine.dispose()
    report.say()


async def _account_costs(report: Report, engine: AsyncEngine, label: str, account: Account) -> None:
    identity = await model_of(engine, account.id)
    sessions = report.sample(await comparable_sessions(engine, account.id), 12)
    probes = [await probes_of(engine, account.id, s, identity) for s in sessions]
    probes = [p for p in probes if p.chunks]
    truths = [await exact(engine, p, identity) for p in probes]
    base = plan(Caller.COMPARISON, Tuning()).limits()
    exact_limits = replace(base, exact_scan_max_chunks=EXACT_PATH)
    exact_ms = [
        (await first_statement(engine, p, identity, exact_limits, 40))[0]
        for _ in range(2)
        for p in probes
    ]
    report.say(f"| {label} | exact path | | {p50(exact_ms):.1f} | 1.00 | 1.000 | |")
    for ef, over in SETTINGS:
        limits = replace(base, exact_scan_max_chunks=0, overfetch=over)
        times, chunk, doubts = [], [], Counter[str]()
        for round_ in range(2):
            for p, truth in zip(probes, truths, strict=True):
                ms, hits, judged = await first_statement(engine, p, identity, limits, ef)
                times.append(ms)
                if round_ == 0:
                    chunk += recalls(hits, truth)[0]
                    doubts.update(judged)
        vouched = doubts["vouched"]
        report.say(
            f"| {label} | {ef} | {over} | {p50(times):.1f} | {p50(times) / p50(exact_ms):.2f} "
            f"| {np.mean(chunk or [1.0]):.3f} ({min(chunk, default=1.0):.2f}) "
            f"| {vouched} of {sum(doubts.values())} |"
        )
