"""Load harness: drive the REST route and the GraphQL field of a running server.

    python -m bench.load.harness --base-url http://127.0.0.1:8000 --key sk-demo-tau-bench-airline \
        --concurrency 20 --seconds 30

Prints throughput, p50/p95/p99 latency and the count of each status; a 503 with Retry-After
is a refusal the service chose, a 500 or a hang (timeout) is a failure. Loopback only.
One key drives it all: serve with SIMILAR_SESSIONS_RATE_LIMIT=off to measure the service
rather than its per-key rate limit (429)."""

from __future__ import annotations

import argparse
import asyncio
import random
import sys
import time
from collections import Counter
from urllib.parse import urlsplit

import httpx

from bench.common.timing import pct

GRAPHQL = """query($id: UUID!) { runtimeSession(id: $id) { title replay { role content }
  similarSessions(limit: 5) { degraded { reasons } results { title band similarity
    matches { text probe { chunkIndex } } } } } }"""
LOOPBACK = {"127.0.0.1", "localhost", "::1", "[::1]"}


async def session_ids(client: httpx.AsyncClient, limit: int = 100) -> list[str]:
    response = await client.post(
        "/graphql", json={"query": f"{{ runtimeSessions(first: {limit}) {{ nodes {{ id }} }} }}"}
    )
    response.raise_for_status()
    return [node["id"] for node in response.json()["data"]["runtimeSessions"]["nodes"]]


async def worker(
    client: httpx.AsyncClient,
    ids: list[str],
    deadline: float,
    results: list[tuple[str, int, float]],
) -> None:
    rng = random.Random()
    while time.monotonic() < deadline:
        sid = rng.choice(ids)
        kind = rng.choice(["rest", "graphql"])
        started = time.perf_counter()
        try:
            if kind == "rest":
                response = await client.get(f"/api/v1/runtime-sessions/{sid}/similar")
            else:
                response = await client.post(
                    "/graphql", json={"query": GRAPHQL, "variables": {"id": sid}}
                )
            status = response.status_code
            if status == 200 and kind == "graphql" and "errors" in response.json():
                status = 299  # answered, with GraphQL errors
        except httpx.TimeoutException:
            status = 0
        results.append((kind, status, (time.perf_counter() - started) * 1000))


async def run(base_url: str, key: str, concurrency: int, seconds: float, hang_s: float) -> int:
    host = urlsplit(base_url).hostname or ""
    if host not in LOOPBACK:
        print(f"refusing to load {host}: this harness only targets loopback", file=sys.stderr)
        return 2
    headers = {"authorization": f"Bearer {key}"}
    limits = httpx.Limits(max_connections=concurrency, max_keepalive_connections=concurrency)
    async with httpx.AsyncClient(
        base_url=base_url, headers=headers, timeout=hang_s, limits=limits
    ) as client:
        ids = await session_ids(client)
        results: list[tuple[str, int, float]] = []
        deadline = time.monotonic() + seconds
        tasks = [
            asyncio.create_task(worker(client, ids, deadline, results)) for _ in range(concurrency)
        ]
        while not all(t.done() for t in tasks):
            await asyncio.sleep(1)
            print(f"\r{len(results)} requests", end="", file=sys.stderr, flush=True)
        print(file=sys.stderr)
    statuses = Counter(status for _, status, _ in results)
    ok = [ms for _, status, ms in results if status == 200]
    print(
        f"concurrency {concurrency}, {seconds:.0f} s, {len(results)} requests, "
        f"{len(results) / seconds:.1f} req/s"
    )
    for kind in ("rest", "graphql"):
        latencies = [ms for k, status, ms in results if k == kind and status == 200]
        if latencies:
            print(
                f"  {kind:8s} ok {len(latencies):6d}  p50 {pct(latencies, 50):7.1f} ms  "
                f"p95 {pct(latencies, 95):7.1f} ms  p99 {pct(latencies, 99):7.1f} ms"
            )
    print("  statuses: " + ", ".join(f"{s or 'timeout'}: {n}" for s, n in sorted(statuses.items())))
    failures = sum(n for s, n in statuses.items() if (s >= 500 and s != 503) or s == 0)
    print(
        f"  failures (500s and hangs): {failures}; "
        f"refused with 503: {statuses.get(503, 0)}; ok: {len(ok)}"
    )
    return 1 if failures else 0


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--base-url", default="http://127.0.0.1:8000")
    parser.add_argument("--key", default="sk-demo-tau-bench-airline")
    parser.add_argument("--concurrency", type=int, default=10)
    parser.add_argument("--seconds", type=float, default=20)
    parser.add_argument(
        "--timeout", type=float, default=30, help="a request slower than this is a hang"
    )
    args = parser.parse_args()
    return asyncio.run(run(args.base_url, args.key, args.concurrency, args.seconds, args.timeout))


if __name__ == "__main__":
    sys.exit(main())
