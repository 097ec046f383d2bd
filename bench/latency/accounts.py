"""Benchmark section of recall and latency by account size: each account's probes against
the one-pass exact scan, and its route over HTTP beside the comparison in process, its
first statement and the exact scan, with the targets they are measured against."""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field

import numpy as np
from sqlalchemy.ext.asyncio import AsyncEngine
from tqdm import tqdm

from bench.common.timing import clocked, p50, pct
from bench.latency.corpus import Account
from bench.latency.measure import Figures, Probe, exact, path_of, probes_of, recalls, served
from bench.latency.report import Report
from bench.latency.server import Client
from data import comparison
from data.account_snapshot import Snapshots
from resolvers.arguments import SimilarArgs
from resolvers.comparison.check_costs import CheckCosts
from resolvers.comparison.phases import compare_sessions
from resolvers.comparison.state import NOT_NARROWED
from resolvers.tuning import Tuning


@dataclass(frozen=True, slots=True)
class InProcess:
    """What the comparison in process runs on, as the server's: connections opened with the
    comparison's settings, and one process-wide model catalog."""

    engine: AsyncEngine
    catalog: Snapshots
    checks: CheckCosts = field(default_factory=CheckCosts)


async def account_figures(
    report: Report,
    engine: AsyncEngine,
    in_process: InProcess,
    clients: tuple[Client, Client],
    label: str,
    account: Account,
    sessions: list[uuid.UUID],
    sizes: dict[str, int],
) -> Figures:
    """Recall against the exact scan, then the route (sent by the lean client, and by httpx
    beside it), the comparison in process, its statement and the exact scan, interleaved,
    after one untimed round that opens and warms the pools' connections."""
    tuning = report.tuning
    fig = Figures(label, sizes[str(account.id)], len(sessions))
    path = await path_of(engine, account.id, tuning)
    fig.path = path.value
    probes = [await probes_of(engine, account.id, s) for s in report.sample(sessions, 15)]
    probes = [p for p in probes if p.chunks]
    headers = {"authorization": f"Bearer {account.key}"}
    for p in tqdm(probes, desc=f"{label} recall", leave=False):
        truth = await exact(engine, p)
        per_probe, session = recalls(await served(engine, p, path, tuning), truth)
        fig.chunk_recall += per_probe
        fig.session_recall.append(session)
    lean, other = clients
    for r in tqdm(range(report.rounds + 1), desc=f"{label} latency", leave=False):
        into = fig if r else Figures(label, 0, 0)  # round 0 warms up and is not kept
        for p in probes:
            route = f"/api/v1/runtime-sessions/{p.session}/similar"
            for client, times in ((lean, into.route_ms), (other, into.httpx_ms)):
                ms, response = await clocked(
                    client.get(route, params={"limit": 10}, headers=headers)
                )
                assert response.status_code == 200, response.text
                times.append(ms)
            into.inproc_ms.append((await clocked(compare(in_process, p, tuning)))[0])
            into.sql_ms.append((await clocked(served(engine, p, path, tuning)))[0])
            into.exact_ms.append((await clocked(exact(engine, p)))[0])
    return fig


async def compare(in_process: InProcess, p: Probe, tuning: Tuning) -> None:
    """The probe's session compared in process, on a connection opened as the route's
    DataLoader opens it."""
    async with comparison.reading(in_process.engine) as conn:
        args = [(p.session, SimilarArgs(limit=10), NOT_NARROWED)]
        await compare_sessions(conn, p.account, args, tuning, in_process.catalog)


def table(report: Report, figures: list[Figures]) -> None:
    report.say("## Recall and latency by account size")
    report.say()
    report.say(
        "| account | chunks | sessions | path | chunk recall@25 | session recall@10 "
        "| route p50 / p95 (HTTP) | in-process p50 | SQL p50 / p95 | exact scan p50 / p95 "
        "| route / exact | SQL / exact | HTTP+GraphQL share | route p50 sent by httpx |"
    )
    report.say("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    for f in figures:
        route, scan = p50(f.route_ms), p50(f.exact_ms)
        report.say(
            f"| {f.name} | {f.chunks} | {f.sessions} | {f.path} "
            f"| {np.mean(f.chunk_recall):.3f} (min {min(f.chunk_recall, default=1):.2f}) "
            f"| {np.mean(f.session_recall):.3f} "
            f"| {route:.1f} / {pct(f.route_ms, 95):.1f} | {p50(f.inproc_ms):.1f} "
            f"| {p50(f.sql_ms):.1f} / {pct(f.sql_ms, 95):.1f} "
            f"| {scan:.1f} / {pct(f.exact_ms, 95):.1f} "
            f"| {route / scan:.2f} | {p50(f.sql_ms) / scan:.2f} "
            f"| {(route - p50(f.inproc_ms)) / route:.0%} | {p50(f.httpx_ms):.1f} |"
        )
    report.say()
    table_targets(report, figures)
    report.say(
        "Recall is against the one-pass exact scan over "
        f"{sum(len(f.chunk_recall) for f in figures)} probes; route = REST GET through "
        "uvicorn over TCP (limit 10), sent on one keep-alive connection of the standard "
        "library's http.client (httpx's client adds about 1 ms a request of its own: its "
        "column); in-process = "
        "compare_sessions on a pooled connection; SQL = the probe statement alone; "
        "exact scan = all probes of the session in one pass over the account's chunks."
    )
    report.say()


def table_targets(report: Report, figures: list[Figures]) -> None:
    small, largest = figures[0], figures[-1]
    route, scan = p50(small.route_ms), p50(small.exact_ms)
    share = (route - p50(small.inproc_ms)) / route
    report.target(
        "small account: route p50 within 2x of its one-pass exact scan",
        f"{route / scan:.2f} ({route:.1f} / {scan:.1f} ms)",
        route / scan <= 2,
    )
    report.target("small account: HTTP share of the route under 20%", f"{share:.0%}", share < 0.2)
    bound = 30 if report.size_name == "1m" else 10
    ratio = p50(largest.route_ms) / p50(largest.exact_ms)
    report.target(
        f"largest account: route p50 within 1/{bound} of its exact scan",
        f"{ratio:.3f} ({p50(largest.route_ms):.1f} / {p50(largest.exact_ms):.1f} ms)",
        ratio <= 1 / bound,
    )
    worst = min(min(f.chunk_recall, default=1.0) for f in figures)
    report.target("no probe below 0.8 chunk recall@25", f"worst {worst:.2f}", worst >= 0.8)
