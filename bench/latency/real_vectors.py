"""Benchmark sections on vectors like real ones (issue #29): for each account of a world
(clustered vectors, or a labelled corpus embedded by the product's model), the route on the
path the product chooses against the same route with the exact path forced, the comparison
in process split into its phases (phase_times.py), and a GraphQL page of 20 sessions against
its 20 requests. Two servers run side by side on the world's database: the tuning under test,
and the same with SIMILAR_SESSIONS_EXACT_SCAN_MAX_CHUNKS past every account."""

from __future__ import annotations

import json
import statistics
import subprocess
import uuid
from collections import Counter
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import sqlalchemy as sa
from sqlalchemy.ext.asyncio import AsyncEngine
from tqdm import tqdm

from bench.common.paths import RESULTS
from bench.common.timing import clocked, p50, pct
from bench.latency.accounts import InProcess
from bench.latency.corpus import Account
from bench.latency.pages import PageTimes, page_against_requests
from bench.latency.phase_times import PHASES, Doubts, Tally, mean_ms, tallied, traced
from bench.latency.report import Report
from bench.latency.server import LeanClient, Reply, start_server
from data import comparison
from data.account_snapshot import Snapshots, read_snapshot
from data.engine import make_engine
from resolvers.arguments import SimilarArgs
from resolvers.comparison.check_costs import CheckCosts
from resolvers.comparison.phases import SimilarKey, batch_of, compare_sessions, look_up
from resolvers.comparison.plans import account_plan
from resolvers.comparison.state import NOT_NARROWED
from resolvers.rules.lookup_plan import Caller
from resolvers.tuning import Tuning

EXACT_FORCED = (
    100_000_000  # SIMILAR_SESSIONS_EXACT_SCAN_MAX_CHUNKS of the exact-path server (its bound)
)
SAMPLED = 12  # sessions per account (the medians of 12)
PAGE = 20
UNVERIFIED = "similar_approximate_unverified"


@dataclass
class Measured:
    """One account's figures: the routes, the server's own elapsed_ms, the comparisons in
    process with their phases, the page, and how the served lists compare with the exact."""

    label: str
    account: Account
    sessions: int
    path: str = ""
    ef_search: str = ""  # what the account's own index is searched at: fitted, or configured
    picked: list[uuid.UUID] = field(default_factory=list)  # the sampled sessions, in order
    route_ms: list[float] = field(default_factory=list)
    elapsed_ms: list[float] = field(default_factory=list)  # the served answers' own figure
    exact_ms: list[float] = field(default_factory=list)  # the route, exact path forced
    tallies: list[Tally] = field(default_factory=list)
    equal: int = 0
    compared: int = 0
    unverified: int = 0
    reasons: Counter[str] = field(default_factory=Counter)
    logged: Counter[str] = field(default_factory=Counter)  # the served server's INFO lines
    page: PageTimes | None = None
    page_single: PageTimes | None = None  # the same page, SIMILAR_SESSIONS_PAGE_CONNECTIONS=1
    page_elapsed_ms: list[float] = field(default_factory=list)  # the page's batch, server's log
    page_tallies: list[Tally] = field(default_factory=list)

    @property
    def ratio(self) -> float:
        return p50(self.route_ms) / p50(self.exact_ms)


@dataclass(frozen=True, slots=True)
class World:
    """A world's database and its accounts, each with the label its tables print."""

    name: str  # names the servers' log files
    url: str
    accounts: list[tuple[str, Account]]


class Servers:
    """The served server, the exact-path server, and the served tuning with a page on one
    connection (SIMILAR_SESSIONS_PAGE_CONNECTIONS=1), on one world's database."""

    def __init__(self, world: World, tuning: Tuning) -> None:
        exact = replace(tuning, exact_scan_max_chunks=EXACT_FORCED)
        single = replace(tuning, page_connections=1)
        self.log = RESULTS / f"server-{world.name}.log"
        self.procs: list[subprocess.Popen[bytes]] = []
        bases = []
        try:
            for t, log in [
                (tuning, self.log),
                (exact, RESULTS / f"server-{world.name}-exact.log"),
                (single, RESULTS / f"server-{world.name}-single.log"),
            ]:
                proc, base = start_server(world.url, t, log)
                self.procs.append(proc)
                bases.append(base)
        except BaseException:
            self.stop()
            raise
        self.served, self.exact, self.single = (LeanClient(b) for b in bases)

    def stop(self) -> None:
        for proc in self.procs:
            proc.terminate()
            proc.wait(timeout=10)


async def measure_world(report: Report, world: World) -> list[Measured]:
    """Every account of the world measured (see the module's docstring)."""
    servers = Servers(world, report.tuning)
    engine = make_engine(world.url, pool_size=2, statement_timeout_ms=120_000)
    comparisons = make_engine(world.url, pool_size=2, comparison=report.tuning.comparison_settings)
    in_process = InProcess(comparisons, Snapshots())
    out = []
    try:
        for label, account in world.accounts:
            out.append(await measure_account(report, engine, in_process, servers, label, account))
    finally:
        servers.stop()
        await engine.dispose()
        await comparisons.dispose()
    return out


async def comparable_sessions(engine: AsyncEngine, account: uuid.UUID) -> list[uuid.UUID]:
    """The account's sessions with a comparable chunk, in id order."""
    async with engine.connect() as conn:
        rows = await conn.execute(
            sa.text(
                "SELECT DISTINCT runtime_session_id FROM session_chunks WHERE account_id = :a "
                "AND redaction_state = 'clear' AND embedding_state = 'embedded' ORDER BY 1"
            ),
            {"a": account},
        )
        return [r[0] for r in rows]


async def fitted_ef_search(engine: AsyncEngine, account: uuid.UUID, tuning: Tuning) -> str:
    """The ef_search the account's comparisons search its own index at (data/ef_fits.py)."""
    async with engine.connect() as conn:
        snapshot = await read_snapshot(conn, account, tuning.exact_scan_max_chunks)
        comparing = account_plan(Caller.COMPARISON, tuning, snapshot, account)
        served = comparing.ef_search
    return f"{served} (fitted)" if served != tuning.ef_search else str(served)


async def measure_account(
    report: Report,
    engine: AsyncEngine,
    in_process: InProcess,
    servers: Servers,
    label: str,
    account: Account,
) -> Measured:
    sessions = await comparable_sessions(engine, account.id)
    fig = Measured(label, account, len(sessions))
    fig.path = await served_path(engine, account.id, sessions[0], report.tuning)
    fig.ef_search = await fitted_ef_search(engine, account.id, report.tuning)
    fig.picked = picked = report.sample(sessions, SAMPLED)
    await _routes(report, in_process, servers, fig, picked)
    offset = servers.log.stat().st_size
    fig.page = await page_against_requests(servers.served, account, report.page_rounds, size=PAGE)
    fig.page_elapsed_ms = batch_elapsed(servers.log, offset, account.id, PAGE)[1:]  # 1: untimed
    fig.page_single = await page_against_requests(
        servers.single, account, report.page_rounds, size=PAGE
    )
    keys = [(uuid.UUID(s), SimilarArgs(limit=10), NOT_NARROWED) for s in fig.page.ids]
    with traced():
        for _ in range(report.page_rounds):
            fig.page_tallies.append(
                (await tallied(compare(in_process, account.id, keys, report.tuning)))[0]
            )
    return fig


async def _routes(
    report: Report,
    in_process: InProcess,
    servers: Servers,
    fig: Measured,
    picked: list[uuid.UUID],
) -> None:
    """Rounds of each sampled session: the served route, the exact-path route and the
    comparison in process (which of the routes goes first alternates), after one untimed
    round; then the lists compared and the served server's INFO lines counted."""
    headers = {"authorization": f"Bearer {fig.account.key}"}
    last: dict[uuid.UUID, tuple[Reply, Reply]] = {}
    offset = 0
    with traced():
        for r in tqdm(range(report.rounds + 1), desc=f"{fig.label} routes", leave=False):
            if r == 1:
                offset = servers.log.stat().st_size
            for s in picked:
                route = f"/api/v1/runtime-sessions/{s}/similar"
                sides = [(servers.served, fig.route_ms), (servers.exact, fig.exact_ms)]
                replies = {}
                for client, times in sides if r % 2 else sides[::-1]:
                    ms, reply = await clocked(
                        client.get(route, params={"limit": 10}, headers=headers)
                    )
                    assert reply.status_code == 200, reply.text
                    replies[client] = reply
                    if r:
                        times.append(ms)
                tally, _ = await tallied(
                    compare(
                        in_process,
                        fig.account.id,
                        [(s, SimilarArgs(limit=10), NOT_NARROWED)],
                        report.tuning,
                    )
                )
                if r:
                    fig.tallies.append(tally)
                    fig.elapsed_ms.append(float(replies[servers.served].json()["elapsed_ms"]))
                last[s] = (replies[servers.served], replies[servers.exact])
    fig.logged = logged_events(servers.log, offset)
    for got, want in last.values():
        fig.compared += 1
        body = got.json()
        fig.equal += result_ids(body) == result_ids(want.json())
        fig.unverified += UNVERIFIED in body["degraded"]["reasons"]
        fig.reasons.update(body["degraded"]["reasons"])


async def served_path(
    engine: AsyncEngine, account: uuid.UUID, session: uuid.UUID, tuning: Tuning
) -> str:
    """The path the product takes for the session's comparison model on the account."""
    batch = batch_of(account, [(session, SimilarArgs(), NOT_NARROWED)], datetime.now(UTC))
    async with engine.connect() as conn:
        batch = await look_up(conn, batch, tuning, Snapshots(), CheckCosts())
    path = batch.path(batch.comparisons[0].model)
    return "none" if path is None else path.value


def result_ids(body: dict[str, Any]) -> list[str]:
    """The sessions a similar route's body lists, in order."""
    return [r["runtime_session_id"] for r in body["results"]]


async def compare(
    in_process: InProcess,
    account: uuid.UUID,
    keys: list[SimilarKey],
    tuning: Tuning,
) -> None:
    """The sessions compared in process, on a connection opened as the route's DataLoader
    opens it, with the process's catalog and record of check costs, as the server's."""
    async with comparison.reading(in_process.engine) as conn:
        await compare_sessions(conn, account, keys, tuning, in_process.catalog, in_process.checks)


def logged_events(log: Path, offset: int) -> Counter[str]:
    """The comparison's INFO lines in the server's log since `offset`, by event, with the
    probes they name summed (`<event>.probes`, `exact_check.lookups`)."""
    counts: Counter[str] = Counter()
    with log.open("rb") as handle:
        handle.seek(offset)
        for raw in handle:
            if not raw.startswith(b"{"):
                continue
            line = json.loads(raw)
            event = line.get("event", "")
            if event in ("similar_sessions_widened", "similar_sessions_verified"):
                counts[event] += 1
                counts[f"{event}.probes"] += int(line.get("probes", 0))
            elif event == "exact_check":
                counts[f"exact_check.{'started' if line.get('started') else 'skipped'}"] += 1
                counts["exact_check.lookups"] += int(line.get("lookups", 0))
            elif event == "similar_sessions":
                counts[event] += 1
                counts["unverified"] += int(line.get("unverified", 0))
    return counts


def batch_elapsed(log: Path, offset: int, account: uuid.UUID, sessions: int) -> list[float]:
    """The elapsed_ms of the account's batches of `sessions` sessions logged since `offset`
    (a page's), in order: a batch cut into parts (SIMILAR_SESSIONS_PAGE_CONNECTIONS) logs one
    line a part, compared at once, so its figure is its slowest part's."""
    out, parts, seen = [], [], 0
    with log.open("rb") as handle:
        handle.seek(offset)
        for raw in handle:
            if not raw.startswith(b"{"):
                continue
            line = json.loads(raw)
            if line.get("event") != "similar_sessions" or line.get("account_id") != str(account):
                continue
            parts.append(float(line["elapsed_ms"]))
            seen += int(line.get("sessions", 0))
            if seen >= sessions:
                if seen == sessions:
                    out.append(max(parts))
                parts, seen = [], 0
    return out


def say_world(report: Report, title: str, figures: list[Measured], note: str) -> None:
    """The world's three tables: the routes, where the time went, the pages."""
    report.say(f"## {title}")
    report.say()
    report.say(note)
    report.say()
    report.say(
        "| account | chunks | sessions | path | ef_search | route p50 / p95 | elapsed_ms p50 "
        "| route p50, exact path forced | route / exact | lists equal to the exact path's "
        "| unverified |"
    )
    report.say("|---|---|---|---|---|---|---|---|---|---|---|")
    for f in figures:
        report.say(
            f"| {f.label} | {f.account.size:,} | {f.sessions:,} | {f.path} | {f.ef_search} "
            f"| {p50(f.route_ms):.1f} / {pct(f.route_ms, 95):.1f} | {p50(f.elapsed_ms):.1f} "
            f"| {p50(f.exact_ms):.1f} | {f.ratio:.2f} | {f.equal} of {f.compared} "
            f"| {f.unverified} |"
        )
    report.say()
    say_phases(report, figures)
    say_pages(report, figures)


def say_phases(report: Report, figures: list[Measured]) -> None:
    report.say(
        "Where the time went, in process (the served tuning; mean ms per comparison, so the "
        "phases add up to the mean; p50 beside it), and what the comparisons did: of the "
        f"{SAMPLED} sessions' comparisons, how many widened their short lookups at "
        f"ef_search {report.tuning.ef_search_retry} or ran an exact check, and why the first "
        "lookups (one per distinct probe vector) could or could not vouch:"
    )
    report.say()
    report.say(
        f"| account | path | p50 | mean | {' | '.join(PHASES)} | widened | checked "
        "| first lookups: vouched / could not (why) | server log: widened, checks (lookups) |"
    )
    report.say("|---|---|---|---|" + "---|" * len(PHASES) + "---|---|---|---|")
    for f in figures:
        totals = [t.total_ms for t in f.tallies]
        doubts = Doubts.of(f.tallies)
        widened = sum(1 for t in f.tallies if t.widened)
        checked = sum(1 for t in f.tallies if t.checked)
        log = f.logged
        report.say(
            f"| {f.label} | {f.path} | {p50(totals):.1f} | {statistics.fmean(totals):.1f} "
            + "".join(f"| {mean_ms(f.tallies, p):.1f} " for p in PHASES)
            + f"| {widened} of {len(f.tallies)} | {checked} of {len(f.tallies)} "
            f"| {doubts.counted()} "
            f"| {log['similar_sessions_widened']} of {log['similar_sessions']} "
            f"({log['similar_sessions_widened.probes']} probes), "
            f"{log['exact_check.started']} ({log['exact_check.lookups']}) |"
        )
    report.say()


def say_pages(report: Report, figures: list[Measured]) -> None:
    report.say(
        f"A GraphQL page of {PAGE} sessions with their similarSessions (limit 10) in one "
        f"request against the same {PAGE} sessions as REST requests (medians of "
        f"{report.page_rounds} alternating rounds), its batch cut over "
        f"{report.tuning.page_connections} connections (SIMILAR_SESSIONS_PAGE_CONNECTIONS), "
        "beside it the same on a server with the setting at 1; the same batch in process "
        "on one connection by phase (mean ms); the server's elapsed_ms is its own comparison "
        "of the page's batch (its log; its slowest part), GraphQL + HTTP the page less that:"
    )
    report.say()
    report.say(
        f"| account | page of {PAGE} | {PAGE} requests | ratio "
        f"| page on 1 connection / its {PAGE} requests (ratio) | server's elapsed_ms "
        f"| GraphQL + HTTP | batch in process | {' | '.join(PHASES)} |"
    )
    report.say("|---|---|---|---|---|---|---|---|" + "---|" * len(PHASES))
    for f in figures:
        if f.page is None:
            continue
        batch, server = p50([t.total_ms for t in f.page_tallies]), p50(f.page_elapsed_ms)
        one = f.page_single
        single = (
            "-" if one is None else f"{p50(one.pages):.0f} / {p50(one.rests):.0f} ({one.ratio:.2f})"
        )
        report.say(
            f"| {f.label} | {p50(f.page.pages):.0f} | {p50(f.page.rests):.0f} "
            f"| {f.page.ratio:.2f} | {single} | {server:.0f} | {p50(f.page.pages) - server:.0f} "
            f"| {batch:.0f} "
            + "".join(f"| {mean_ms(f.page_tallies, p):.0f} " for p in PHASES)
            + "|"
        )
    report.say()
