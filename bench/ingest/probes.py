"""What the benchmark watches while agents send: the other account's similarSessions, how soon
a replayed session is counted and found, and the resident memory of the server and its
indexer."""

from __future__ import annotations

import asyncio
import math
import queue
import time
from dataclasses import dataclass, field
from typing import Any
from uuid import UUID

import asyncpg
import httpx
import psutil  # type: ignore[import-untyped]  # no stubs; a dev dependency

from bench.common.databases import libpq
from bench.ingest.world import STREAM_ACCOUNT, World, replayed_id

SIMILAR = """query($id: UUID!) { runtimeSession(id: $id) {
  similarSessions(limit: 10) { degraded { reasons } results { runtimeSessionId similarity } } } }"""
FRESH = """query($s: UUID!) { fresh: runtimeSession(id: $s) {
  similarSessions(limit: 1, includeMatchText: false) { embeddedChunks pendingChunks } } }"""
TWIN_PAGE = """query($t: UUID!, $after: String) { twin: runtimeSession(id: $t) {
  similarSessions(limit: 20, maxMatchesPerSession: 1, includeMatchText: false, after: $after) {
    results { runtimeSessionId } endCursor hasNextPage } } }"""
POLL_S = 0.2
# past this long since its acknowledgement, a session is polled every POLL_LATE_S: a session
# not found within seconds is past the 2 s target whatever the resolution, and at 0.2 s the
# watchers' comparisons were most of PostgreSQL's time (bench/results/ingest-varied.md)
POLL_FAST_S = 5.0
POLL_LATE_S = 1.0
START_EVERY_S = 2.0
WATCHED_AT_ONCE = 4
TWIN_PAGES = 3
FRESH_TIMEOUT_S = 60.0


@dataclass
class Asker:
    """The other account: similarSessions of one of its sessions, every `every` seconds."""

    client: httpx.AsyncClient
    session: UUID
    every: float = 0.5
    refused: int = 0
    why: dict[str, int] = field(default_factory=dict)  # each refusal's status or first error

    async def ask(self) -> float:
        started = time.perf_counter()
        response = await self.client.post(
            "/graphql", json={"query": SIMILAR, "variables": {"id": str(self.session)}}
        )
        ms = (time.perf_counter() - started) * 1000
        errors = response.json().get("errors") if response.status_code == 200 else None
        if response.status_code != 200 or errors:
            self.refused += 1
            reason = str(response.status_code if errors is None else errors[0].get("message"))
            self.why[reason[:80]] = self.why.get(reason[:80], 0) + 1
        return ms

    def refusals(self) -> str:
        """How many were refused, and why."""
        why = ", ".join(f"{n} {reason}" for reason, n in sorted(self.why.items()))
        return f"{self.refused}{f' ({why})' if why else ''}"

    async def until(self, stop: asyncio.Event | float) -> list[float]:
        """Asks until `stop` is set (or for that many seconds)."""
        deadline = time.monotonic() + stop if isinstance(stop, float) else None
        times: list[float] = []
        while not (stop.is_set() if isinstance(stop, asyncio.Event) else False):
            if deadline is not None and time.monotonic() >= deadline:
                break
            started = time.monotonic()
            times.append(await self.ask())
            await asyncio.sleep(max(0.0, self.every - (time.monotonic() - started)))
        return times


@dataclass(frozen=True, slots=True)
class Fresh:
    """One replayed session watched from its first acknowledgement: seconds until its passage
    was counted (embeddedChunks), until its twin's list held it, until the dense model had
    embedded a passage of it (None: not within the time out, or no dense model)."""

    corpus: str
    acked: float  # monotonic time of its first acknowledgement
    counted: float | None
    found: float | None
    dense: float | None


@dataclass
class Freshness:
    """Watches replayed sessions from their first acknowledgement: every START_EVERY_S the
    newest one acknowledged, up to WATCHED_AT_ONCE at a time. A twin's list is read a page of
    20 at a time, up to TWIN_PAGES pages (copies of a held-out session replayed before are of
    its task too, and may fill the first page)."""

    client: httpx.AsyncClient
    world: World
    acks: Any  # a multiprocessing queue of (conversation, acknowledged at)
    samples: list[Fresh] = field(default_factory=list)
    deeper: int = 0  # sessions found past the twin's first page
    asked: int = 0  # similarSessions the watching asked

    def newest(self) -> tuple[str, float] | None:
        got: tuple[str, float] | None = None
        while True:
            try:
                got = self.acks.get_nowait()
            except queue.Empty:
                return got

    async def run(self, stop: asyncio.Event) -> None:
        conn = await asyncpg.connect(libpq(self.world.url)) if self.world.dense else None
        watching: set[asyncio.Task[Fresh]] = set()
        started: list[asyncio.Task[Fresh]] = []
        try:
            while not stop.is_set():
                got = self.newest()
                if got is None or len(watching) >= WATCHED_AT_ONCE:
                    await asyncio.sleep(0.05)
                    continue
                task = asyncio.create_task(self.watch(*got, conn))
                started.append(task)
                watching.add(task)
                task.add_done_callback(watching.discard)
                await asyncio.sleep(START_EVERY_S)
            self.samples = list(await asyncio.gather(*started))
        finally:
            if conn is not None:
                await conn.close()

    async def listed(self, twin: UUID, sid: UUID, after: str | None) -> tuple[bool, str | None]:
        """Whether one page of the twin's list holds the session; the next page's cursor."""
        self.asked += 1
        response = await self.client.post(
            "/graphql",
            json={"query": TWIN_PAGE, "variables": {"t": str(twin), "after": after}},
        )
        data = (response.json().get("data") or {}) if response.status_code == 200 else {}
        page = (data.get("twin") or {}).get("similarSessions") or {}
        held = any(r["runtimeSessionId"] == str(sid) for r in page.get("results", []))
        return held, page.get("endCursor") if page.get("hasNextPage") else None

    async def watch(self, conversation: str, acked: float, conn: Any) -> Fresh:
        name = conversation.split("|", 1)[1]
        corpus = "tau-bench" if name.startswith("airline/") else "coding-agents"
        sid, twin = replayed_id(conversation), self.world.twins[name]
        counted = found = dense = None
        polls = 0
        while time.monotonic() < acked + FRESH_TIMEOUT_S:
            polls += 1
            if counted is None:
                self.asked += 1
                response = await self.client.post(
                    "/graphql", json={"query": FRESH, "variables": {"s": str(sid)}}
                )
                data = (response.json().get("data") or {}) if response.status_code == 200 else {}
                fresh = (data.get("fresh") or {}).get("similarSessions") or {}
                if fresh.get("embeddedChunks", 0) >= 1:
                    counted = time.monotonic() - acked
            if counted is not None and found is None:
                held, after = await self.listed(twin, sid, None)
                pages = 1
                # the deeper pages every 4th poll, to bound the load the watching adds
                while not held and after is not None and pages < TWIN_PAGES and polls % 4 == 0:
                    held, after = await self.listed(twin, sid, after)
                    pages += 1
                if held:
                    found = time.monotonic() - acked
                    self.deeper += pages > 1
            if conn is not None and dense is None:
                embedded = await conn.fetchval(
                    "SELECT count(*) FROM session_chunks WHERE account_id = $1 "
                    "AND runtime_session_id = $2 AND dense_state = 'embedded'",
                    STREAM_ACCOUNT,
                    sid,
                )
                if embedded:
                    dense = time.monotonic() - acked
            if counted is not None and found is not None and (conn is None or dense is not None):
                break
            late = time.monotonic() - acked > POLL_FAST_S
            await asyncio.sleep(POLL_LATE_S if late else POLL_S)
        return Fresh(corpus, acked, counted, found, dense)


@dataclass
class Backlog:
    """The stream account's lexical model (a refit's swap names a new one) and its passages
    waiting, to be embedded under it or under a fit staged beside it (data/next_fits.py), read
    from the database every `every` seconds."""

    url: str
    every: float = 2.0
    samples: list[tuple[float, str, int]] = field(default_factory=list)  # (time, model, waiting)

    async def watch(self, stop: asyncio.Event) -> None:
        conn = await asyncpg.connect(libpq(self.url))
        try:
            while not stop.is_set():
                model = await conn.fetchval(
                    "SELECT model FROM embedding_settings WHERE account_id = $1", STREAM_ACCOUNT
                )
                waiting = await conn.fetchval(
                    "SELECT (SELECT count(*) FROM session_chunks WHERE account_id = $1 "
                    "AND embedding_state = 'pending') + (SELECT count(*) FROM session_chunk_next "
                    "WHERE account_id = $1 AND state = 'pending')",
                    STREAM_ACCOUNT,
                )
                self.samples.append((time.monotonic(), str(model), int(waiting)))
                await asyncio.sleep(self.every)
        finally:
            await conn.close()

    def refits(self) -> list[float]:
        """When the model changed (monotonic times)."""
        return [
            t
            for (t, model, _), (_, before, _) in zip(self.samples[1:], self.samples, strict=False)
            if model != before
        ]


@dataclass
class Memory:
    """Resident memory (MB) of the server's processes and of its indexer, sampled."""

    pid: int
    serve: list[tuple[float, float]] = field(default_factory=list)  # (time, MB)
    indexer: list[tuple[float, float]] = field(default_factory=list)

    def processes(self) -> tuple[list[psutil.Process], list[psutil.Process]]:
        top = psutil.Process(self.pid)
        children = top.children(recursive=True)
        indexers = [p for p in children if "index" in " ".join(p.cmdline())]
        return [top] + [p for p in children if p not in indexers], indexers

    def sample(self) -> None:
        now = time.monotonic()
        try:
            serve, indexers = self.processes()
            self.serve.append((now, sum(p.memory_info().rss for p in serve) / 2**20))
            if indexers:
                self.indexer.append((now, sum(p.memory_info().rss for p in indexers) / 2**20))
        except psutil.Error:
            pass

    async def watch(self, stop: asyncio.Event, every: float = 1.0) -> None:
        while not stop.is_set():
            self.sample()
            await asyncio.sleep(every)

    def cpu_seconds(self) -> tuple[float, float]:
        """CPU seconds (user + system) the server's processes and the indexer have used."""
        serve, indexers = self.processes()

        def used(ps: list[psutil.Process]) -> float:
            return sum(sum(p.cpu_times()[:2]) for p in ps)

        return used(serve), used(indexers)


def postgres_cpu_seconds(data_dir: str) -> float:
    """CPU seconds the PostgreSQL server of `data_dir` has used: its postmaster's own and its
    ended backends' (reaped: the postmaster's children times), and its live backends'. The
    bench's database and whatever else that server serves meanwhile."""
    for proc in psutil.process_iter(["name", "cmdline"]):
        try:
            if proc.info["name"] == "postgres" and data_dir in " ".join(proc.info["cmdline"] or []):
                own = float(sum(proc.cpu_times()[:4]))
                return own + sum(sum(p.cpu_times()[:2]) for p in proc.children(recursive=True))
        except psutil.Error:
            pass
    return float("nan")


# A histogram's buckets (its name) for the series whose labels include all of these: the
# server's answers to `POST /v1/traces` with 200, from the request's arrival at the app to its
# answer's end; and those requests' wait for a seat in their account's fair queue.
HANDLED = (
    "similar_sessions_http_request_duration_seconds_bucket",
    ('route="/v1/traces"', 'method="POST"', 'status="200"'),
)
WAITED = ("similar_sessions_admission_wait_seconds_bucket", ('edge="ingest"',))


async def scraped(client: httpx.AsyncClient) -> str:
    """The server's metrics (GET /metrics), read once for every histogram taken from them."""
    return (await client.get("/metrics")).text


def handled_in(text: str, histogram: tuple[str, tuple[str, ...]] = HANDLED) -> dict[float, float]:
    """The histogram's cumulative counts by bucket bound (seconds), in the metrics' text."""
    name, labels = histogram
    counts: dict[float, float] = {}
    for line in text.splitlines():
        if not line.startswith(name + "{") or not all(label in line for label in labels):
            continue
        series, value = line.rsplit(" ", 1)
        bound = series.split('le="', 1)[1].split('"', 1)[0]
        counts[math.inf if bound == "+Inf" else float(bound)] = float(value)
    return counts


def handled_within(before: dict[float, float], after: dict[float, float], q: float) -> float:
    """The bucket bound (seconds) within which q percent of the answers counted between the two
    scrapes were given (inf: past the last bound; nan: none counted)."""
    bounds = sorted(after)
    counts = [after[b] - before.get(b, 0.0) for b in bounds]
    if not counts or counts[-1] <= 0:
        return math.nan
    return next(b for b, n in zip(bounds, counts, strict=True) if n >= counts[-1] * q / 100)
