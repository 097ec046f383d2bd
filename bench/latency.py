"""Benchmark section of recall and latency by account size: each account's probes against
the one-pass exact scan, and its route over HTTP beside the comparison in process, its
first statement and the exact scan, with the targets they are measured against."""

from __future__ import annotations

import uuid
from typing import Any

import httpx
import numpy as np
from sqlalchemy.ext.asyncio import AsyncEngine
from tqdm import tqdm

from bench.measure import (
    Figures,
    LeanClient,
    Probe,
    exact,
    p50,
    path_of,
    pct,
    probes_of,
    recalls,
    served,
    timed,
)
from bench.report import Report
from data import comparison
from data.model_catalog import ModelCatalog
from resolvers.arguments import SimilarArgs
from resolvers.similar import compare_sessions


class LatencySections(Report):
    """Recall and latency of a small, a medium and the largest account."""

    comparisons: AsyncEngine  # opened with the comparison's settings, as the server's
    catalog: ModelCatalog  # process-wide, as the server's

    async def account_figures(
        self,
        engine: AsyncEngine,
        clients: tuple[LeanClient, httpx.AsyncClient],
        label: str,
        account: Any,
        sessions: list[uuid.UUID],
        sizes: dict[str, int],
    ) -> Figures:
        """Recall against the exact scan, then the route (sent by the lean client, and by
        httpx beside it), the comparison in process, its statement and the exact scan,
        interleaved, after one untimed round that opens and warms the pools' connections."""
        fig = Figures(label, sizes[str(account.id)], len(sessions))
        path = await path_of(engine, account.id, self.tuning)
        fig.path = path.value
        probes = [await probes_of(engine, account.id, s) for s in self.sample(sessions, 15)]
        probes = [p for p in probes if p.chunks]
        headers = {"authorization": f"Bearer {account.key}"}
        for p in tqdm(probes, desc=f"{label} recall", leave=False):
            truth = await exact(engine, p)
            got = await served(engine, p, path, self.tuning)
            per_probe, session = recalls(got, truth)
            fig.chunk_recall += per_probe
            fig.session_recall.append(session)
        lean, other = clients
        for r in tqdm(range(self.rounds + 1), desc=f"{label} latency", leave=False):
            into = fig if r else Figures(label, 0, 0)  # round 0 warms up and is not kept
            for p in probes:
                route = f"/api/v1/runtime-sessions/{p.session}/similar"
                for client, times in ((lean, into.route_ms), (other, into.httpx_ms)):
                    ms, response = await timed(
                        lambda c=client, route=route: c.get(
                            route, params={"limit": 10}, headers=headers
                        )
                    )
                    assert response.status_code == 200, response.text
                    times.append(ms)
                into.inproc_ms.append(
                    (await timed(lambda p=p: self.in_process(self.comparisons, p)))[0]
                )
                into.sql_ms.append(
                    (await timed(lambda p=p: served(engine, p, path, self.tuning)))[0]
                )
                into.exact_ms.append((await timed(lambda p=p: exact(engine, p)))[0])
        return fig

    async def in_process(self, engine: AsyncEngine, p: Probe) -> None:
        async with comparison.reading(engine) as conn:  # as the route's DataLoader opens it
            await compare_sessions(
                conn, p.account, [(p.session, SimilarArgs(limit=10))], self.tuning, self.catalog
            )

    def table(self, figures: list[Figures]) -> None:
        self.say("## Recall and latency by account size")
        self.say()
        self.say(
            "| account | chunks | sessions | path | chunk recall@25 | session recall@10 "
            "| route p50 / p95 (HTTP) | in-process p50 | SQL p50 / p95 | exact scan p50 / p95 "
            "| route / exact | SQL / exact | HTTP+GraphQL share | route p50 sent by httpx |"
        )
        self.say("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
        for f in figures:
            route, scan = p50(f.route_ms), p50(f.exact_ms)
            self.say(
                f"| {f.name} | {f.chunks} | {f.sessions} | {f.path} "
                f"| {np.mean(f.chunk_recall):.3f} (min {min(f.chunk_recall, default=1):.2f}) "
                f"| {np.mean(f.session_recall):.3f} "
                f"| {route:.1f} / {pct(f.route_ms, 95):.1f} | {p50(f.inproc_ms):.1f} "
                f"| {p50(f.sql_ms):.1f} / {pct(f.sql_ms, 95):.1f} "
                f"| {scan:.1f} / {pct(f.exact_ms, 95):.1f} "
                f"| {route / scan:.2f} | {p50(f.sql_ms) / scan:.2f} "
                f"| {(route - p50(f.inproc_ms)) / route:.0%} | {p50(f.httpx_ms):.1f} |"
            )
        self.say()
        self.table_targets(figures)
        self.say(
            "Recall is against the one-pass exact scan over "
            f"{sum(len(f.chunk_recall) for f in figures)} probes; route = REST GET through "
            "uvicorn over TCP (limit 10), sent on one keep-alive connection of the standard "
            "library's http.client (httpx's client adds about 1 ms a request of its own: its "
            "column); in-process = "
            "compare_sessions on a pooled connection; SQL = the probe statement alone; "
            "exact scan = all probes of the session in one pass over the account's chunks."
        )
        self.say()

    def table_targets(self, figures: list[Figures]) -> None:
        small, largest = figures[0], figures[-1]
        route, scan = p50(small.route_ms), p50(small.exact_ms)
        share = (route - p50(small.inproc_ms)) / route
        self.target(
            "small account: route p50 within 2x of its one-pass exact scan",
            f"{route / scan:.2f} ({route:.1f} / {scan:.1f} ms)",
            route / scan <= 2,
        )
        self.target("small account: HTTP share of the route under 20%", f"{share:.0%}", share < 0.2)
        bound = 30 if self.size_name == "1m" else 10
        ratio = p50(largest.route_ms) / p50(largest.exact_ms)
        self.target(
            f"largest account: route p50 within 1/{bound} of its exact scan",
            f"{ratio:.3f} ({p50(largest.route_ms):.1f} / {p50(largest.exact_ms):.1f} ms)",
            ratio <= 1 / bound,
        )
        worst = min(min(f.chunk_recall, default=1.0) for f in figures)
        self.target("no probe below 0.8 chunk recall@25", f"worst {worst:.2f}", worst >= 0.8)
