"""Fairness: one key sending the heaviest allowed queries at its rate limit, against another
account's small requests and the server's memory (issue #30).

    python -m bench.fairness [--seconds 20] [--rate 20] [--issue-query] [--env VAR=value]

Serves this checkout's app (`similar-sessions serve` in a process of its own, with the
settings' defaults but for the `--env` given) on a database of its own (`fairness_demo`: the
demo corpus and a second account, made once and reused) and measures three phases:

- idle: the other account's `{ viewer { name } }`, one at a time, every 50 ms;
- load: the same, while the demo key sends the heaviest query the bounds allow (its replay
  turns on one page of 100 sessions, with their content, and 29 more aliases of 100
  sessions), or with `--issue-query` the issue's (30 aliases of `runtimeSessions(first:
  100) { nodes { replayPage(first: 500) { nodes { ordinal } } } }`), at `--rate` a second
  (20: the default rate limit), each sent on time whether or not those before were answered;
- after: the load stopped and the server left alone for `--settle` seconds.

Prints the other account's p50 / p95 in each phase and the ratio to idle, what the heavy
key was answered (200, with the codes of its GraphQL errors, or the status and `error` of a
refusal), and the server's RSS at start, at its peak and after. Loopback only."""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import subprocess
import sys
import time
import uuid
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

import asyncpg
import httpx

from bench.common.serving import serve
from config.settings import Settings
from data.engine import make_engine
from data.migrate import migrate
from data.server import resolve_url
from indexer import demo
from indexer.commands import config_from, load_demo, registry_for
from transfer.importing import import_lines

ROOT = Path(__file__).resolve().parents[1]
SERVER_LOG = Path("/tmp/bench-fairness-server.log")
DATABASE = "fairness_demo"
OTHER_ACCOUNT = uuid.uuid5(demo.DEMO_NAMESPACE, "fairness-other-account")
OTHER_KEY = "sk-fairness-other-account"
REPLAY = "replayPage(first: {first}) {{ nodes {{ {fields} }} }}"
# The issue's query: 30 aliases, each 100 sessions with a page of 500 turns (1.5 M planned).
ISSUE_PAGE = REPLAY.format(first=500, fields="ordinal")
ISSUE = " ".join(
    f"a{i}: runtimeSessions(first: 100) {{ nodes {{ {ISSUE_PAGE} }} }}" for i in range(30)
)


def heaviest_allowed(turns: int) -> str:
    """The heaviest query the bounds allow: the replay turns spent on one page of 100
    sessions (their content too), and the other 29 aliases as large pages of sessions."""
    replay = REPLAY.format(first=turns // 100, fields="ordinal role kind content")
    pages = " ".join(
        f"b{i}: runtimeSessions(first: 100) {{ nodes {{ id title sourceId status startedAt }} }}"
        for i in range(29)
    )
    return f"{{ a: runtimeSessions(first: 100) {{ nodes {{ {replay} }} }} {pages} }}"


LIGHT = "{ viewer { name } }"
PROBE_INTERVAL_S = 0.05


def with_database(url: str, database: str) -> str:
    parts = urlsplit(url)
    return urlunsplit((parts.scheme, parts.netloc, "/" + database, parts.query, ""))


def libpq(url: str) -> str:
    return url.replace("postgresql+asyncpg://", "postgresql://", 1)


async def prepared(server_url: str) -> str:
    """The benchmark's database, made and loaded once: the demo corpus and another account."""
    admin = await asyncpg.connect(libpq(with_database(server_url, "postgres")))
    try:
        exists = await admin.fetchval("SELECT 1 FROM pg_database WHERE datname = $1", DATABASE)
        if not exists:
            await admin.execute(f'CREATE DATABASE "{DATABASE}"')
    finally:
        await admin.close()
    url = with_database(server_url, DATABASE)
    engine = make_engine(url)
    try:
        await migrate(engine)
        settings = Settings.from_env({})
        if not exists:
            await load_demo(engine, config_from(settings, progress=False), registry_for(settings))
        account = {
            "type": "account",
            "id": str(OTHER_ACCOUNT),
            "name": "the other account",
            "api_keys": [{"key": OTHER_KEY, "scopes": ["view_runtime_sessions"]}],
        }
        async with engine.begin() as conn:
            await import_lines(conn, "fairness", [json.dumps(account)])
    finally:
        await engine.dispose()
    return url


def start_server(url: str, env: dict[str, str], log: Path) -> tuple[subprocess.Popen[bytes], str]:
    return serve(url, env, log)


@dataclass
class Memory:
    """The server's resident memory (Linux's VmRSS), sampled."""

    pid: int
    samples: list[float] = field(default_factory=list)

    def sample(self) -> float:
        status = Path(f"/proc/{self.pid}/status").read_text(encoding="ascii")
        [kib] = [line.split()[1] for line in status.splitlines() if line.startswith("VmRSS:")]
        mb = int(kib) / 1024
        self.samples.append(mb)
        return mb

    async def watch(self, stop: asyncio.Event) -> None:
        while not stop.is_set():
            self.sample()
            await asyncio.sleep(0.2)


async def probe(client: httpx.AsyncClient, seconds: float) -> list[float]:
    """The other account's small request, one at a time: its latencies in ms."""
    latencies: list[float] = []
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        started = time.perf_counter()
        response = await client.post("/graphql", json={"query": LIGHT})
        latencies.append((time.perf_counter() - started) * 1000)
        if response.status_code != 200:
            latencies[-1] = float("inf")  # refused: counted as slower than anything answered
        await asyncio.sleep(PROBE_INTERVAL_S)
    return latencies


def outcome(response: httpx.Response) -> str:
    """What one heavy request was answered: its status and `error`, or its errors' codes."""
    if response.status_code != 200:
        try:
            return f"{response.status_code} {response.json().get('error')}"
        except ValueError:
            return str(response.status_code)
    codes = Counter(e.get("extensions", {}).get("code") for e in response.json().get("errors", []))
    if not codes:
        return "200"
    return "200 with " + ", ".join(f"{n} {code}" for code, n in sorted(codes.items(), key=str))


async def heavy(client: httpx.AsyncClient, query: str, rate: float, seconds: float) -> Counter[str]:
    """The query at `rate` per second, each sent on time: what they were answered."""
    answered: Counter[str] = Counter()

    async def one() -> None:
        try:
            answered[outcome(await client.post("/graphql", json={"query": query}))] += 1
        except httpx.TimeoutException:
            answered["timeout"] += 1

    tasks = []
    started = time.monotonic()
    for n in range(int(rate * seconds)):
        await asyncio.sleep(max(0.0, started + n / rate - time.monotonic()))
        tasks.append(asyncio.create_task(one()))
    await asyncio.gather(*tasks)
    return answered


def summary(latencies: list[float]) -> tuple[float, float]:
    """p50 and p95, in ms."""
    ordered = sorted(latencies)
    return statistics.median(ordered), ordered[int(0.95 * (len(ordered) - 1))]


@dataclass(frozen=True)
class Figures:
    phases: dict[str, tuple[float, float]]  # the other account's p50, p95 by phase
    answered: Counter[str]  # what the heavy key was answered
    memory: tuple[float, float, float]  # server RSS at start, at its peak, after (MB)


async def measure(base: str, memory: Memory, args: argparse.Namespace) -> Figures:
    def client(key: str) -> httpx.AsyncClient:
        return httpx.AsyncClient(
            base_url=base, headers={"authorization": f"Bearer {key}"}, timeout=120
        )

    async with client(OTHER_KEY) as other, client(demo.DEMO_API_KEY) as loud:
        await probe(other, 1)  # warm: connections, the query caches
        start_mb = memory.sample()
        idle = await probe(other, args.seconds / 2)
        stop = asyncio.Event()
        watcher = asyncio.create_task(memory.watch(stop))
        loaded, answered = await asyncio.gather(
            probe(other, args.seconds), heavy(loud, args.query, args.rate, args.seconds)
        )
        stop.set()
        await watcher
        await asyncio.sleep(args.settle)
        after = await probe(other, args.seconds / 2)
        end_mb = memory.sample()
    phases = {"idle": summary(idle), "load": summary(loaded), "after": summary(after)}
    return Figures(phases, answered, (start_mb, max(memory.samples), end_mb))


def report(figures: Figures, args: argparse.Namespace) -> None:
    kind = "the issue's query" if args.issue_query else "the heaviest allowed query"
    print(
        f"heavy key sending {kind} at {args.rate:g}/s for {args.seconds:g} s; "
        "the other account every 50 ms"
    )
    idle_p50 = figures.phases["idle"][0]
    for phase, (p50, p95) in figures.phases.items():
        print(
            f"  other account {phase:5s}: p50 {p50:7.1f} ms  p95 {p95:7.1f} ms  "
            f"p50 {p50 / idle_p50:5.2f}x idle"
        )
    answered = "; ".join(f"{k}: {n}" for k, n in sorted(figures.answered.items()))
    print(f"  heavy key answered: {answered}")
    start, peak, end = figures.memory
    print(
        f"  server RSS: start {start:.0f} MB, peak {peak:.0f} MB, after {end:.0f} MB "
        f"({100 * (end - start) / start:+.0f}% of start)"
    )


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--seconds", type=float, default=20, help="length of the load phase")
    parser.add_argument("--rate", type=float, default=20, help="heavy requests per second")
    parser.add_argument("--settle", type=float, default=5, help="pause after the load")
    parser.add_argument(
        "--env", action="append", default=[], help="VAR=value for the server (repeatable)"
    )
    parser.add_argument(
        "--issue-query",
        action="store_true",
        help="send the issue's query (refused whole) rather than the heaviest allowed",
    )
    args = parser.parse_args()
    env = dict(item.split("=", 1) for item in args.env)
    settings = Settings.from_env({**os.environ, **env})
    args.query = (
        "{ " + ISSUE + " }" if args.issue_query else heaviest_allowed(settings.replay_turns)
    )
    url = asyncio.run(prepared(resolve_url(settings.database_url, settings.data_dir)))
    proc, base = start_server(url, env, SERVER_LOG)
    try:
        figures = asyncio.run(measure(base, Memory(proc.pid), args))
    finally:
        proc.terminate()
        proc.wait(timeout=30)
    report(figures, args)
    return 0


if __name__ == "__main__":
    sys.exit(main())
