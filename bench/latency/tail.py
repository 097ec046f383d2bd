"""Benchmark section of the largest account at scale (issue #29, parts 3 and 4): ef_search
100, 200 and 400 each measured whole, with the vouching retry and the exact check as the
product runs them, side by side in one run. For each value: the route's p50 and p95, the
lists against the exact path's, the first statement's chunk recall, a page of 50 against its
50 requests, and where the slowest comparisons' time went (phase_times.py), so that the p95
names its cause."""

from __future__ import annotations

import statistics
import uuid
from dataclasses import dataclass, field, replace

from sqlalchemy.ext.asyncio import AsyncEngine
from tqdm import tqdm

from bench.common.paths import RESULTS
from bench.common.timing import clocked, p50, pct
from bench.latency.accounts import InProcess
from bench.latency.corpus import Account
from bench.latency.measure import exact, probes_of
from bench.latency.pages import LookupsAlone, PageTimes, lookups_alone, page_against_requests
from bench.latency.phase_times import PHASES, Doubts, Tally, mean_ms, tallied, traced
from bench.latency.plans import lookups
from bench.latency.real_vectors import EXACT_FORCED, comparable_sessions, compare, result_ids
from bench.latency.report import Report
from bench.latency.server import LeanClient, start_server
from data.account_snapshot import Snapshots
from data.engine import make_engine
from resolvers.arguments import SimilarArgs
from resolvers.comparison.state import NOT_NARROWED
from resolvers.rules.lookup_path import LookupPath
from resolvers.tuning import Tuning

EF_VALUES = (100, 200, 400)
SESSIONS = 40  # sampled sessions of the account; each round asks every one of them
TAIL_SHARE = 0.1  # the slowest tenth of the comparisons in process is the tail's table
PAGE = 50


@dataclass
class AtEf:
    """One ef_search value's figures."""

    ef: int
    route_ms: list[float] = field(default_factory=list)
    tallies: list[Tally] = field(default_factory=list)
    asked: list[uuid.UUID] = field(default_factory=list)  # the session of each tally
    equal: int = 0
    compared: int = 0
    session_recall: list[float] = field(default_factory=list)
    chunk_recall: list[float] = field(default_factory=list)
    page: PageTimes | None = None
    alone: LookupsAlone | None = None  # the page's lookups alone: its floor

    @property
    def totals(self) -> list[float]:
        return [t.total_ms for t in self.tallies]

    def tail(self) -> list[Tally]:
        """The slowest TAIL_SHARE of the comparisons in process."""
        ranked = sorted(self.tallies, key=lambda t: t.total_ms, reverse=True)
        return ranked[: max(1, round(len(ranked) * TAIL_SHARE))]

    def slow_sessions(self) -> set[uuid.UUID]:
        """The distinct sessions of the tail's comparisons."""
        slow = {id(t) for t in self.tail()}
        return {s for s, t in zip(self.asked, self.tallies, strict=True) if id(t) in slow}


async def at_scale(report: Report, url: str, account: Account, size_name: str) -> None:
    """The section (see the module's docstring), on the account of the loaded corpus."""
    engine = make_engine(url, pool_size=2, statement_timeout_ms=120_000)
    tunings = {ef: replace(report.tuning, ef_search=ef) for ef in EF_VALUES}
    servers, procs = {}, []
    in_process = {}
    try:
        for ef, tuning in tunings.items():
            proc, base = start_server(url, tuning, RESULTS / f"server-{size_name}-ef{ef}.log")
            procs.append(proc)
            servers[ef] = LeanClient(base)
            comparisons = make_engine(url, pool_size=2, comparison=tuning.comparison_settings)
            in_process[ef] = InProcess(comparisons, Snapshots())
        exact_tuning = replace(report.tuning, exact_scan_max_chunks=EXACT_FORCED)
        proc, base = start_server(url, exact_tuning, RESULTS / f"server-{size_name}-exact.log")
        procs.append(proc)
        exact_server = LeanClient(base)
        sessions = report.sample(await comparable_sessions(engine, account.id), SESSIONS)
        figures = {ef: AtEf(ef) for ef in EF_VALUES}
        await _routes(report, account, sessions, servers, in_process, tunings, figures)
        await _against_exact(account, sessions, servers, exact_server, figures)
        await _chunk_recall(report, engine, account, sessions, figures)
        for ef, fig in figures.items():
            fig.page = await page_against_requests(
                servers[ef], account, report.page_rounds, size=PAGE
            )
            fig.alone = await lookups_alone(
                in_process[ef].engine, account.id, fig.page.ids, tunings[ef], report.page_rounds
            )
    finally:
        for proc in procs:
            proc.terminate()
            proc.wait(timeout=10)
        await engine.dispose()
        for side in in_process.values():
            await side.engine.dispose()
    _say(report, account, list(figures.values()))


async def _routes(
    report: Report,
    account: Account,
    sessions: list[uuid.UUID],
    servers: dict[int, LeanClient],
    in_process: dict[int, InProcess],
    tunings: dict[int, Tuning],
    figures: dict[int, AtEf],
) -> None:
    """Rounds over the sampled sessions: each session's route on every ef_search's server
    and its comparison in process at each value, the values' order turning with the
    session, after one untimed round."""
    headers = {"authorization": f"Bearer {account.key}"}
    with traced():
        for r in tqdm(range(report.rounds + 1), desc=f"{account.name} by ef_search", leave=False):
            for n, s in enumerate(sessions):
                order = EF_VALUES[n % 3 :] + EF_VALUES[: n % 3]
                for ef in order:
                    route = f"/api/v1/runtime-sessions/{s}/similar"
                    ms, reply = await clocked(
                        servers[ef].get(route, params={"limit": 10}, headers=headers)
                    )
                    assert reply.status_code == 200, reply.text
                    keys = [(s, SimilarArgs(limit=10), NOT_NARROWED)]
                    tally, _ = await tallied(compare(in_process[ef], account.id, keys, tunings[ef]))
                    if r:
                        figures[ef].route_ms.append(ms)
                        figures[ef].tallies.append(tally)
                        figures[ef].asked.append(s)


async def _against_exact(
    account: Account,
    sessions: list[uuid.UUID],
    servers: dict[int, LeanClient],
    exact_server: LeanClient,
    figures: dict[int, AtEf],
) -> None:
    """Each sampled session's list at every ef_search against the exact path's list."""
    headers = {"authorization": f"Bearer {account.key}"}
    for s in tqdm(sessions, desc="against the exact path", leave=False):
        route = f"/api/v1/runtime-sessions/{s}/similar"
        want = result_ids(
            (await exact_server.get(route, params={"limit": 10}, headers=headers)).json()
        )
        for ef, fig in figures.items():
            got = result_ids(
                (await servers[ef].get(route, params={"limit": 10}, headers=headers)).json()
            )
            fig.compared += 1
            fig.equal += got == want
            fig.session_recall.append(len(set(got) & set(want)) / len(want) if want else 1.0)


async def _chunk_recall(
    report: Report,
    engine: AsyncEngine,
    account: Account,
    sessions: list[uuid.UUID],
    figures: dict[int, AtEf],
) -> None:
    """The first statement's chunk recall@25 of each probe at each ef_search."""
    probes = [await probes_of(engine, account.id, s) for s in sessions[:15]]
    probes = [p for p in probes if p.chunks]
    truths = [await exact(engine, p) for p in probes]
    for ef, fig in figures.items():
        tuning = replace(report.tuning, ef_search=ef)
        fig.chunk_recall, _, _ = await lookups(
            engine, probes, truths, LookupPath.ACCOUNT_INDEX, tuning
        )


def _say(report: Report, account: Account, figures: list[AtEf]) -> None:
    report.say(f"## The largest account by ef_search, with the vouching retry ({account.name})")
    report.say()
    report.say(
        f"{account.size:,} chunks; {SESSIONS} sampled sessions, {report.rounds} rounds after "
        "an untimed one, each session's route asked of one server per ef_search (the "
        "values' order turning) and compared in process beside it; lists against the exact "
        "path's (a server with the exact path forced); chunk recall of the first statement "
        f"over {min(15, SESSIONS)} sessions' probes; a GraphQL page of {PAGE} on "
        f"{report.tuning.page_connections} connections against its {PAGE} REST requests "
        f"({report.page_rounds} rounds), and beside it the page's first statements alone (its "
        f"probes' HNSW lookups, nothing else) in its {report.tuning.page_connections} parts at "
        f"once against one session at a time, in process: the least a page can cost against "
        f"its requests on this machine's cores. ms."
    )
    report.say()
    report.say(
        "| ef_search | route p50 / p95 / max | in process p50 / p95 | lists equal to the "
        "exact path's | session recall@10 | chunk recall@25 (min) | widened | checked "
        f"| page of {PAGE} / {PAGE} requests (ratio) | its lookups alone: at once / one by "
        "one (ratio) |"
    )
    report.say("|---|---|---|---|---|---|---|---|---|---|")
    for f in figures:
        widened = sum(1 for t in f.tallies if t.widened)
        checked = sum(1 for t in f.tallies if t.checked)
        page = (
            "-"
            if f.page is None
            else (f"{p50(f.page.pages):.0f} / {p50(f.page.rests):.0f} ({f.page.ratio:.2f})")
        )
        alone = (
            "-"
            if f.alone is None
            else (
                f"{p50(f.alone.at_once):.0f} / {p50(f.alone.one_by_one):.0f} ({f.alone.ratio:.2f})"
            )
        )
        report.say(
            f"| {f.ef} | {p50(f.route_ms):.1f} / {pct(f.route_ms, 95):.1f} / "
            f"{max(f.route_ms):.0f} | {p50(f.totals):.1f} / {pct(f.totals, 95):.1f} "
            f"| {f.equal} of {f.compared} | {statistics.fmean(f.session_recall):.3f} "
            f"| {statistics.fmean(f.chunk_recall):.3f} ({min(f.chunk_recall):.2f}) "
            f"| {widened} of {len(f.tallies)} | {checked} of {len(f.tallies)} | {page} "
            f"| {alone} |"
        )
    report.say()
    report.say(
        f"The tail: the slowest {TAIL_SHARE:.0%} of the comparisons in process at each "
        "ef_search, mean ms by phase, what they did, and how many distinct sessions they "
        "were (a session slow in every round is its data; sessions slow in one round are "
        "the machine):"
    )
    report.say()
    report.say(
        f"| ef_search | comparisons | mean | {' | '.join(PHASES)} | widened | checked "
        "| first lookups that could not vouch (why) | distinct sessions |"
    )
    report.say("|---|---|---|" + "---|" * len(PHASES) + "---|---|---|---|")
    for f in figures:
        tail = f.tail()
        report.say(
            f"| {f.ef} | {len(tail)} | {statistics.fmean(t.total_ms for t in tail):.1f} "
            + "".join(f"| {mean_ms(tail, p):.1f} " for p in PHASES)
            + f"| {sum(1 for t in tail if t.widened)} "
            f"| {sum(1 for t in tail if t.checked)} "
            f"| {Doubts.of(tail).said()} | {len(f.slow_sessions())} |"
        )
    report.say()
    _targets(report, figures)


def _targets(report: Report, figures: list[AtEf]) -> None:
    served = next((f for f in figures if f.ef == report.tuning.ef_search), figures[-1])
    p95 = pct(served.route_ms, 95)
    report.target(
        f"{report.size_name}: route p95 at most 100 ms (ef_search {served.ef})",
        f"{p95:.1f} ms",
        p95 <= 100,
    )
    for f in figures:
        if f.page is None:
            continue
        ms = p50(f.page.pages)
        report.target(
            f"{report.size_name}: a page of {PAGE} at most 1 s and 0.4x of its {PAGE} requests "
            f"(ef_search {f.ef})",
            f"{ms:.0f} ms, {f.page.ratio:.2f}",
            ms <= 1000 and f.page.ratio <= 0.4,
        )
