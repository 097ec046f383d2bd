"""What the benchmark measures with: the exact scan, the served lookups, recall, timing, and
the server it drives over HTTP."""

from __future__ import annotations

import dataclasses
import http.client
import json
import os
import socket
import statistics
import subprocess
import sys
import time
import urllib.parse
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, TypeVar

import httpx
import numpy as np
import sqlalchemy as sa
from sqlalchemy.ext.asyncio import AsyncEngine

from bench.load import IDENTITY, libpq
from data import comparison
from data.model_catalog import ModelCatalog
from data.model_indexes import comparable_predicate
from resolvers import ranking
from resolvers.arguments import SimilarArgs
from resolvers.check_costs import CheckCosts
from resolvers.lookup_path import LookupPath
from resolvers.similar import Batch, look_up, plan
from resolvers.tuning import Tuning

ROOT = Path(__file__).resolve().parents[1]
SIZES = {"100k": 100_000, "1m": 1_000_000, "20k": 20_000}
PER_PROBE = ranking.SIMILAR_NEIGHBOURS_PER_PROBE
T = TypeVar("T")
FLOOR = ranking.MIN_SIMILAR_SIMILARITY

# The one-pass exact scan, written independently of the product's SQL: every probe's
# distance to every comparable chunk of the account in one statement, ranked per probe.
EXACT_SCAN = f"""
WITH p AS MATERIALIZED (
  SELECT u.ord AS probe, c.runtime_session_id AS sid, (c.embedding::vector(384)) AS v
  FROM unnest(CAST(:ids AS uuid[])) WITH ORDINALITY AS u(id, ord)
  JOIN session_chunks c ON c.account_id = :account AND c.id = u.id)
SELECT probe - 1, id, sid, 1 - d FROM (
  SELECT probe, id, sid, d, row_number() OVER (PARTITION BY probe ORDER BY d, id) AS rn
  FROM (SELECT p.probe, c.id, c.runtime_session_id AS sid,
               (c.embedding::vector(384)) <=> p.v AS d
        FROM p JOIN session_chunks c ON c.account_id = :account
         AND {comparable_predicate(IDENTITY, "c")} AND c.runtime_session_id <> p.sid
        OFFSET 0) AS scored
  WHERE 1 - d >= {FLOOR}) AS ranked
WHERE rn <= {PER_PROBE}
"""


def pct(values: list[float], q: float) -> float:
    return float(np.percentile(values, q)) if values else float("nan")


def p50(values: list[float]) -> float:
    return statistics.median(values) if values else float("nan")


@dataclass
class Probe:
    account: uuid.UUID
    session: uuid.UUID
    chunks: list[uuid.UUID]


@dataclass
class Figures:
    name: str
    chunks: int
    sessions: int
    path: str = ""
    chunk_recall: list[float] = field(default_factory=list)
    session_recall: list[float] = field(default_factory=list)
    route_ms: list[float] = field(default_factory=list)
    httpx_ms: list[float] = field(default_factory=list)  # the same route, sent by httpx
    inproc_ms: list[float] = field(default_factory=list)
    sql_ms: list[float] = field(default_factory=list)
    exact_ms: list[float] = field(default_factory=list)


async def timed(work: Callable[[], Awaitable[Any]]) -> tuple[float, Any]:
    t0 = time.perf_counter()
    out = await work()
    return (time.perf_counter() - t0) * 1000, out


async def clocked(work: Awaitable[T]) -> tuple[float, T]:
    """Milliseconds the awaited work took, and its result."""
    t0 = time.perf_counter()
    out = await work
    return (time.perf_counter() - t0) * 1000, out


async def probes_of(engine: AsyncEngine, account: uuid.UUID, session: uuid.UUID) -> Probe:
    async with engine.connect() as conn:
        rows = await conn.execute(
            sa.text(
                "SELECT id FROM session_chunks WHERE account_id = :a AND runtime_session_id = :s "
                f"AND {comparable_predicate(IDENTITY)} ORDER BY occurred_at, chunk_index, id"
            ),
            {"a": account, "s": session},
        )
        chunks = [row[0] for row in rows]
    return Probe(account, session, [chunks[p] for p in ranking.probe_positions(len(chunks))])


async def _looked(engine: AsyncEngine, probe: Probe, path: LookupPath, tuning: Tuning) -> Batch:
    """The product's first statement (and its retry of short probes) for one session, with
    the exact-scan size that forces the path (the account's own index when it has one)."""
    cap = 100_000_000 if path is LookupPath.EXACT else 0
    forced = dataclasses.replace(tuning, exact_scan_max_chunks=cap)
    batch = plan(probe.account, [(probe.session, SimilarArgs())], datetime.now(UTC))
    async with engine.connect() as conn:
        await look_up(conn, batch, forced, ModelCatalog(), CheckCosts())
    return batch


async def served(
    engine: AsyncEngine, probe: Probe, path: LookupPath, tuning: Tuning
) -> list[ranking.Hit]:
    """The served per-probe lists; on the shared index even where the account has its own."""
    if path is LookupPath.INDEX:
        limits = comparison.Limits(PER_PROBE, FLOOR, tuning.overfetch, 0, own_index=False)
        async with engine.begin() as conn:
            await comparison.configure_comparison(conn, tuning.comparison_settings)
            ask = comparison.Ask(0, probe.session)
            rows = (await comparison.look_up(conn, probe.account, [ask], [IDENTITY], limits)).hits
    else:
        rows = (await _looked(engine, probe, path, tuning)).looked.hits
    return [ranking.Hit(r.probe, r.chunk_id, r.session_id, r.similarity) for r in rows]


async def exact(engine: AsyncEngine, probe: Probe) -> list[ranking.Hit]:
    async with engine.begin() as conn:
        rows = await conn.execute(
            sa.text(EXACT_SCAN), {"ids": probe.chunks, "account": probe.account}
        )
        return [ranking.Hit(int(r[0]), r[1], r[2], float(r[3])) for r in rows]


def recalls(got: list[ranking.Hit], truth: list[ranking.Hit]) -> tuple[list[float], float]:
    """(chunk recall@25 of each probe with an exact answer, session recall@10)."""
    per_probe = []
    for n in {h.probe for h in truth}:
        want = {h.chunk_id for h in truth if h.probe == n}
        have = {h.chunk_id for h in got if h.probe == n}
        per_probe.append(len(want & have) / len(want))
    top = [n.session_id for n in ranking.rank_neighbours(truth, 2)[:10]]
    mine = {n.session_id for n in ranking.rank_neighbours(got, 2)[:10]}
    session = 1.0 if not top else len(set(top) & mine) / len(top)
    return per_probe, session


async def path_of(engine: AsyncEngine, account: uuid.UUID, tuning: Tuning) -> LookupPath:
    """The path the product takes for the account, read from its first statement."""
    async with engine.connect() as conn:
        session = (
            await conn.execute(
                sa.text(
                    "SELECT runtime_session_id FROM session_chunks WHERE account_id = :a "
                    f"AND {comparable_predicate(IDENTITY)} LIMIT 1"
                ),
                {"a": account},
            )
        ).scalar_one()
    batch = plan(account, [(session, SimilarArgs())], datetime.now(UTC))
    async with engine.connect() as conn:
        await look_up(conn, batch, tuning, ModelCatalog(), CheckCosts())
    path = batch.path(str(IDENTITY))
    assert path is not None
    return path


@dataclass(frozen=True, slots=True)
class Reply:
    status_code: int
    content: bytes

    @property
    def text(self) -> str:
        return self.content.decode()

    def json(self) -> Any:
        return json.loads(self.content)


def _encoded(value: Any) -> bytes:
    return json.dumps(value).encode()


class LeanClient:
    """The benchmark's HTTP client: one keep-alive HTTP/1.1 connection of the standard
    library's http.client. Measured side by side on the small account's route, httpx's
    AsyncClient adds about 1 ms to every request (a refused request: 1.06 ms with httpx,
    0.39 with http.client, 0.38 with bare sockets), time that is the client library's and
    not the service's. Requests are sent one after another, so blocking the event loop for
    each is harmless: the server runs in its own process."""

    RETRIED = (http.client.RemoteDisconnected, BrokenPipeError, ConnectionResetError)

    def __init__(self, base: str, timeout_s: float = 120) -> None:
        parts = urllib.parse.urlsplit(base)
        assert parts.hostname is not None and parts.port is not None, base
        self.conn = http.client.HTTPConnection(parts.hostname, parts.port, timeout=timeout_s)

    async def get(
        self, path: str, params: dict[str, Any] | None = None, headers: dict[str, str] | None = None
    ) -> Reply:
        query = f"?{urllib.parse.urlencode(params)}" if params else ""
        return self.send("GET", path + query, None, headers or {})

    async def post(
        self, path: str, json: Any = None, headers: dict[str, str] | None = None
    ) -> Reply:
        headers = {**(headers or {}), "content-type": "application/json"}
        return self.send("POST", path, _encoded(json), headers)

    def send(self, method: str, path: str, body: bytes | None, headers: dict[str, str]) -> Reply:
        try:
            return self._exchange(method, path, body, headers)
        except self.RETRIED:  # uvicorn closes a connection idle for 5 s (between sections)
            self.conn.close()
            return self._exchange(method, path, body, headers)

    def _exchange(
        self, method: str, path: str, body: bytes | None, headers: dict[str, str]
    ) -> Reply:
        self.conn.request(method, path, body=body, headers=headers)
        response = self.conn.getresponse()
        return Reply(response.status, response.read())


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def start_server(url: str, tuning: Tuning, log_path: Path) -> tuple[subprocess.Popen[bytes], str]:
    port = free_port()
    env = {
        **os.environ,
        "DATABASE_URL": libpq(url),
        "SIMILAR_SESSIONS_LOG_LEVEL": "INFO",
        "SIMILAR_SESSIONS_EXACT_SCAN_MAX_CHUNKS": str(tuning.exact_scan_max_chunks),
        "SIMILAR_SESSIONS_HNSW_EF_SEARCH": str(tuning.ef_search),
        "SIMILAR_SESSIONS_HNSW_OVERFETCH": str(tuning.overfetch),
        "SIMILAR_SESSIONS_VERIFY_TIMEOUT_MS": str(tuning.verify_timeout_ms),
        "SIMILAR_SESSIONS_STATEMENT_TIMEOUT_MS": "60000",
        "SIMILAR_SESSIONS_COMPARISON_TIMEOUT_MS": "60000",
        "SIMILAR_SESSIONS_RATE_LIMIT": "off",  # one key times the route back to back
    }
    cli = str(Path(sys.executable).parent / "similar-sessions")
    proc = subprocess.Popen(
        [cli, "serve", "--port", str(port)],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=log_path.open("wb"),
    )
    base = f"http://127.0.0.1:{port}"
    for _ in range(200):
        try:
            if httpx.get(base + "/healthz").status_code == 200:
                return proc, base
        except httpx.TransportError:
            pass
        time.sleep(0.1)
    proc.kill()
    raise RuntimeError(f"server did not start; see {log_path}")
