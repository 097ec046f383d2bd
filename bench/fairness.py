"""Fairness: what one account's load does to another account, and whether a lone account is
ever held back (issues #30, #37).

    python -m bench.fairness [--seconds 20]
        [--cases tokens,fragments,failure-modes,mcp-failure-modes,heaviest,adversarial-replay,
                 plain-replay,lone] [--out FILE]
        [--env VAR=value]

Serves this checkout's app (`similar-sessions serve` in a process of its own: uvicorn, the
settings' defaults but for `--env`) on the failure modes' 100k-chunk world (database
fm_100k, made by bench/latency/failure_modes.py's corpus and reused): the loud account is
its largest (25k passages, its newest 500 sessions failed) with six keys; the light client
is the second largest account, asking similarSessions of one of its sessions every 0.5 s.

Each case measures the light client idle, then beside the load, then after a settle:
- tokens: the issue's 962-token query (`{ viewer { name } ... x240 }`, a varying run of
  spaces each time), from each of the six keys at 10 a second;
- fragments: issue 59's chain of eight fragments, each spreading the one below ten times
  (651 characters, ten million fields once spread; a varying run of spaces each time), from
  each of the six keys at 10 a second;
- failure-modes: each of the six keys asking `failureModes(windowDays: 150)` two at a time;
- mcp-failure-modes: the same load from agents: each of the six keys calling the MCP tool
  `failure_modes` (window_days 150) in a loop, two at a time, through the SDK's client over
  streamable HTTP at /mcp (issue 57; each call also answers its groups' first members);
- heaviest: one key sending the heaviest query the bounds allow (the replay turns on a page
  of 100 sessions and 29 more aliases of 100 sessions) at 20 a second;
- adversarial-replay: each of the six keys at 10 a second asking the replay of another of
  the loud account's ADVERSARIAL sessions, each one turn of `sk-` x 15,000 (45 KB) and its
  number (issue 59: one took 7.2 s to mask on the event loop; each text is another, so the
  masking's cache never answers); plain-replay, the same with a turn of prose as long (what
  the replay of 45 KB costs without the adversarial text);
- lone: the light client asks once, then the loud account alone compares 12 sessions at once
  and asks one page of 20 with their similarSessions, then pauses 1 s, over and over.

Prints, per case: the light client's p50 / p95 idle and under load and their ratios, its
refusals, what the loud account was answered, and the server's RSS before, at its peak and
after. Writes bench/results/fairness-100k.md. Loopback only."""

from __future__ import annotations

import argparse
import asyncio
import itertools
import json
import os
import sys
import time
import uuid
from collections import Counter
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import httpx2
from mcp.client.client import Client
from mcp.client.streamable_http import streamable_http_client

from bench.common.paths import result
from bench.common.serving import serve
from bench.common.timing import p50, pct
from bench.latency.database import prepare
from bench.latency.failure_modes import DATABASE, corpus, mark_failed, other_session
from config.settings import Settings
from data.engine import make_engine
from data.import_rows import add_api_keys
from data.server import resolve_url
from transfer.importing import import_lines

SERVER_LOG = Path("/tmp/bench-fairness-server.log")
OUT = result("fairness", "100k")  # the failure modes' 100k-chunk world
FAILED = 500
KEYS = 6
LIGHT_EVERY_S = 0.5
REPLAY = "replayPage(first: {first}) {{ nodes {{ {fields} }} }}"
SIMILAR = """query($id: UUID!) { runtimeSession(id: $id) {
  similarSessions(limit: 10) { degraded { reasons } results { runtimeSessionId similarity } } } }"""
FAILURE_MODES = """{ failureModes(windowDays: 150, limit: 10) {
  groupCount groups { size isNew representative { id } } } }"""
PAGE = """{ runtimeSessions(first: 20) { nodes { id
  similarSessions(limit: 10) { results { runtimeSessionId similarity } } } } }"""


def tokens_query(spaces: int) -> str:
    """The issue's query: 240 copies of `viewer { name }`, 962 tokens, a run of spaces that
    varies (a parse cache does not see it again)."""
    return "{ " + " ".join(["viewer { name }"] * 240) + " " * spaces + "}"


def fragment_chain(spaces: int) -> str:
    """Issue 59's query: eight fragments, each spreading the one below ten times (651
    characters at one space), with a run of spaces that varies."""
    gap = " " * (1 + spaces)
    text = f"query {{ ...F8 }}{gap}fragment F1 on Query {{ viewer {{ name }} }}"
    for level in range(2, 9):
        text += f"{gap}fragment F{level} on Query {{ {' '.join([f'...F{level - 1}'] * 10)} }}"
    return text


ADVERSARIAL = 600  # sessions of one adversarial turn each (fewer than 6 keys x 10/s x 10 s)
REPLAYED = '{{ runtimeSession(id: "{id}") {{ replay(first: 1) {{ content }} }} }}'


# Each kind of replayed turn: `sk-` x 15,000 (45 KB) and its number, or as much prose.
TURNS = {"adversarial": "sk-" * 15000, "plain": "the deploy failed again " * 1875}


def adversarial_lines(account: uuid.UUID) -> list[str]:
    """The loud account's ADVERSARIAL sessions of each kind of TURNS (ids made from their
    numbers: a run again writes the same rows), each one turn and its number."""
    return [line for kind in TURNS for line in _turn_lines(account, kind)]


def _turn_lines(account: uuid.UUID, kind: str) -> list[str]:
    started = "2026-01-01T00:00:00Z"
    lines = []
    for n in range(ADVERSARIAL):
        session = uuid.uuid5(account, f"fairness-{kind}-{n}")
        lines.append(
            json.dumps(
                {
                    "type": "session",
                    "id": str(session),
                    "account_id": str(account),
                    "title": f"{kind} {n}",
                    "source_type": "bench",
                    "source_id": str(n),
                    "reference": "",
                    "status": "completed",
                    "started_at": started,
                    "last_activity_at": started,
                }
            )
        )
        lines.append(
            json.dumps(
                {
                    "type": "activity",
                    "id": str(uuid.uuid5(session, "turn")),
                    "runtime_session_id": str(session),
                    "ordinal": 0,
                    "occurred_at": started,
                    "role": "user",
                    "kind": "message",
                    "content": TURNS[kind] + f" {n}",
                }
            )
        )
    return lines


def heaviest_allowed(turns: int) -> str:
    """The heaviest query the bounds allow: the replay turns spent on one page of 100
    sessions (their content too), and the other 29 aliases as large pages of sessions."""
    replay = REPLAY.format(first=turns // 100, fields="ordinal role kind content")
    pages = " ".join(
        f"b{i}: runtimeSessions(first: 100) {{ nodes {{ id title sourceId status startedAt }} }}"
        for i in range(29)
    )
    return f"{{ a: runtimeSessions(first: 100) {{ nodes {{ {replay} }} }} {pages} }}"


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


def outcome(response: httpx.Response) -> str:
    """What one request was answered: 200 (with its errors' codes), or a refusal's status
    and `error`."""
    if response.status_code != 200:
        try:
            return f"{response.status_code} {response.json().get('error')}"
        except ValueError:
            return str(response.status_code)
    codes = Counter(e.get("extensions", {}).get("code") for e in response.json().get("errors", []))
    if not codes:
        return "200"
    return "200 with " + ", ".join(f"{n} {code}" for code, n in sorted(codes.items(), key=str))


@dataclass
class Light:
    """The light client: similarSessions of one of its sessions, one request every 0.5 s."""

    client: httpx.AsyncClient
    session: uuid.UUID
    refused: int = 0

    async def ask(self) -> float:
        started = time.perf_counter()
        response = await self.client.post(
            "/graphql", json={"query": SIMILAR, "variables": {"id": str(self.session)}}
        )
        ms = (time.perf_counter() - started) * 1000
        if response.status_code != 200 or response.json().get("errors"):
            self.refused += 1
        return ms

    async def every(self, seconds: float) -> list[float]:
        times: list[float] = []
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            started = time.monotonic()
            times.append(await self.ask())
            await asyncio.sleep(max(0.0, LIGHT_EVERY_S - (time.monotonic() - started)))
        return times


Load = Callable[[list[httpx.AsyncClient], float, Counter[str]], Awaitable[None]]


async def sent(client: httpx.AsyncClient, query: str, answered: Counter[str]) -> None:
    try:
        answered[outcome(await client.post("/graphql", json={"query": query}))] += 1
    except httpx.TimeoutException:
        answered["timeout"] += 1


async def at_rate(
    client: httpx.AsyncClient, queries: Callable[[int], str], rate: float, seconds: float
) -> Counter[str]:
    """Requests at `rate` a second, each sent on time whether or not those before were
    answered."""
    answered: Counter[str] = Counter()
    tasks = []
    started = time.monotonic()
    for n in range(int(rate * seconds)):
        await asyncio.sleep(max(0.0, started + n / rate - time.monotonic()))
        tasks.append(asyncio.create_task(sent(client, queries(n), answered)))
    await asyncio.gather(*tasks)
    return answered


async def tokens(loud: list[httpx.AsyncClient], seconds: float, answered: Counter[str]) -> None:
    for counts in await asyncio.gather(
        *(at_rate(c, lambda n: tokens_query(n % 97), 10, seconds) for c in loud)
    ):
        answered.update(counts)


async def fragments(loud: list[httpx.AsyncClient], seconds: float, answered: Counter[str]) -> None:
    for counts in await asyncio.gather(
        *(at_rate(c, lambda n: fragment_chain(n % 97), 10, seconds) for c in loud)
    ):
        answered.update(counts)


def replayed(account: uuid.UUID, kind: str) -> Load:
    async def load(loud: list[httpx.AsyncClient], seconds: float, answered: Counter[str]) -> None:
        def query(key: int) -> Callable[[int], str]:
            def nth(n: int) -> str:
                number = (n * len(loud) + key) % ADVERSARIAL
                session = uuid.uuid5(account, f"fairness-{kind}-{number}")
                return REPLAYED.format(id=session)

            return nth

        for counts in await asyncio.gather(
            *(at_rate(c, query(k), 10, seconds) for k, c in enumerate(loud))
        ):
            answered.update(counts)

    return load


async def looping(client: httpx.AsyncClient, query: str, seconds: float) -> Counter[str]:
    answered: Counter[str] = Counter()
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        await sent(client, query, answered)
    return answered


async def failure_modes(
    loud: list[httpx.AsyncClient], seconds: float, answered: Counter[str]
) -> None:
    two_each = [looping(c, FAILURE_MODES, seconds) for c in loud for _ in range(2)]
    for counts in await asyncio.gather(*two_each):
        answered.update(counts)


async def mcp_looping(loud: httpx.AsyncClient, seconds: float) -> Counter[str]:
    """An agent of the loud account calling failure_modes over MCP, again and again."""
    answered: Counter[str] = Counter()
    http = httpx2.AsyncClient(
        base_url=str(loud.base_url),
        headers={"authorization": loud.headers["authorization"]},
        timeout=120,
    )
    async with Client(streamable_http_client(f"{loud.base_url}/mcp", http_client=http)) as agent:
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            try:
                result = await agent.call_tool("failure_modes", {"window_days": 150, "limit": 10})
            except Exception as exc:  # counted, as a refusal is: the load goes on
                answered[f"mcp {type(exc).__name__}"] += 1
                continue
            error = (result.structured_content or {}).get("error")
            answered[f"mcp tool error {error}" if result.is_error else "mcp answered"] += 1
    return answered


async def mcp_failure_modes(
    loud: list[httpx.AsyncClient], seconds: float, answered: Counter[str]
) -> None:
    two_each = [mcp_looping(c, seconds) for c in loud for _ in range(2)]
    for counts in await asyncio.gather(*two_each):
        answered.update(counts)


def heaviest(turns: int) -> Load:
    async def load(loud: list[httpx.AsyncClient], seconds: float, answered: Counter[str]) -> None:
        answered.update(await at_rate(loud[0], lambda _: heaviest_allowed(turns), 20, seconds))

    return load


def lone(ids: list[uuid.UUID]) -> Load:
    async def load(loud: list[httpx.AsyncClient], seconds: float, answered: Counter[str]) -> None:
        async def compare(sid: uuid.UUID) -> None:
            response = await loud[0].post(
                "/graphql", json={"query": SIMILAR, "variables": {"id": str(sid)}}
            )
            answered[outcome(response)] += 1

        deadline = time.monotonic() + seconds
        for round_ in itertools.count():
            if time.monotonic() >= deadline:
                return
            await asyncio.gather(*(compare(ids[(12 * round_ + n) % len(ids)]) for n in range(12)))
            await sent(loud[0], PAGE, answered)
            await asyncio.sleep(1)  # 13 requests a round: within the key's 20 a second

    return load


@dataclass(frozen=True)
class Figures:
    case: str
    idle: list[float]
    load: list[float]
    after: list[float]
    light_refused: int
    answered: Counter[str]
    memory: tuple[float, float, float]  # server RSS before, at its peak, after (MB)


async def run_case(
    name: str, load: Load, light: Light, loud: list[httpx.AsyncClient], memory: Memory, args: Any
) -> Figures:
    await light.every(1)  # warm
    light.refused = 0
    before = memory.sample()
    idle = await light.every(args.seconds / 2)
    memory.samples.clear()
    stop = asyncio.Event()
    watcher = asyncio.create_task(memory.watch(stop))
    answered: Counter[str] = Counter()
    if name == "lone":
        await light.ask()  # asked just before: nobody else asks while the loud account works
        await load(loud, args.seconds, answered)
        loaded: list[float] = []
    else:
        loaded, _ = await asyncio.gather(
            light.every(args.seconds), load(loud, args.seconds, answered)
        )
    stop.set()
    await watcher
    peak = max(memory.samples)
    await asyncio.sleep(args.settle)
    after = await light.every(args.seconds / 2)
    return Figures(
        name, idle, loaded, after, light.refused, answered, (before, peak, memory.sample())
    )


async def prepared() -> tuple[str, list[str], tuple[str, uuid.UUID], list[uuid.UUID], uuid.UUID]:
    """The world (made once), the loud account's newest sessions failed, its six keys and its
    adversarial sessions; the light client's key and session, the loud account's failed
    sessions and the loud account."""
    settings = Settings.from_env()
    server = resolve_url(settings.database_url, settings.data_dir)
    world, failures = corpus()
    url, _ = await prepare(server, DATABASE, world, settings.exact_scan_max_chunks, False)
    engine = make_engine(url)
    try:
        ids = await mark_failed(engine, failures, FAILED)
        keys = [failures.key] + [f"{failures.key}-fairness-{n}" for n in range(1, KEYS)]
        async with engine.begin() as conn:
            await add_api_keys(conn, failures.id, [(k, ["view_runtime_sessions"]) for k in keys])
        other = await other_session(engine, failures)
        async with engine.begin() as conn:
            await import_lines(conn, "adversarial", adversarial_lines(failures.id))
    finally:
        await engine.dispose()
    return url, keys, other, ids, failures.id


def ratio(values: list[float], idle: list[float], q: float) -> str:
    if not values:
        return "-"
    return f"{pct(values, q):.0f} ms ({pct(values, q) / pct(idle, q):.2f}x)"


def report(rows: list[Figures], args: argparse.Namespace) -> str:
    lines = [
        "# Fairness: another account beside one account's load",
        "",
        f"`python -m bench.fairness --seconds {args.seconds:g}` "
        f"({', '.join(f'`{e}`' for e in args.env) or 'default settings'}); "
        "the light client asks similarSessions every 0.5 s.",
        "",
        "| case | light idle p50 / p95 | light under load p50 | p95 | light refused "
        "| loud account answered | server RSS before / peak / after |",
        "|---|---|---|---|---|---|---|",
    ]
    for f in rows:
        answered = "; ".join(f"{k}: {n}" for k, n in sorted(f.answered.items()))
        before, peak, after = f.memory
        lines.append(
            f"| {f.case} | {p50(f.idle):.0f} / {pct(f.idle, 95):.0f} ms "
            f"| {ratio(f.load, f.idle, 50)} | {ratio(f.load, f.idle, 95)} "
            f"| {f.light_refused} | {answered} "
            f"| {before:.0f} / {peak:.0f} / {after:.0f} MB "
            f"({100 * (after - before) / before:+.0f}%) |"
        )
    return "\n".join(lines) + "\n"


async def measure(base: str, memory: Memory, args: argparse.Namespace, world: Any) -> list[Figures]:
    _, keys, (other_key, other_session_id), ids, loud_account = world
    settings = Settings.from_env({**os.environ, **args.envs})
    cases: dict[str, Load] = {
        "tokens": tokens,
        "fragments": fragments,
        "adversarial-replay": replayed(loud_account, "adversarial"),
        "plain-replay": replayed(loud_account, "plain"),
        "failure-modes": failure_modes,
        "mcp-failure-modes": mcp_failure_modes,
        "heaviest": heaviest(settings.replay_turns),
        "lone": lone(ids),
    }

    def client(key: str) -> httpx.AsyncClient:
        return httpx.AsyncClient(
            base_url=base, headers={"authorization": f"Bearer {key}"}, timeout=120
        )

    loud = [client(k) for k in keys]
    rows = []
    async with client(other_key) as other:
        light = Light(other, other_session_id)
        for name in args.cases:
            rows.append(await run_case(name, cases[name], light, loud, memory, args))
            print(report(rows[-1:], args).splitlines()[-1], file=sys.stderr)
    for c in loud:
        await c.aclose()
    return rows


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--seconds", type=float, default=20, help="length of each load phase")
    parser.add_argument("--settle", type=float, default=5, help="pause after each load")
    parser.add_argument(
        "--cases",
        type=lambda s: s.split(","),
        default=[
            "tokens",
            "fragments",
            "failure-modes",
            "mcp-failure-modes",
            "heaviest",
            "adversarial-replay",
            "lone",
        ],
    )
    parser.add_argument(
        "--env", action="append", default=[], help="VAR=value for the server (repeatable)"
    )
    parser.add_argument(
        "--out",
        type=Path,
        default=OUT,
        help="where the report goes (not written with --env); a run of some cases only "
        "should not replace the kept run of all",
    )
    args = parser.parse_args()
    args.envs = dict(item.split("=", 1) for item in args.env)
    world = asyncio.run(prepared())
    proc, base = serve(world[0], args.envs, SERVER_LOG)
    try:
        rows = asyncio.run(measure(base, Memory(proc.pid), args, world))
    finally:
        proc.terminate()
        proc.wait(timeout=30)
    text = report(rows, args)
    print(text)
    if not args.env:
        args.out.write_text(text, encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
