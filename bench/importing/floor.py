"""The import benchmark's floor: a raw COPY of the chunk rows into a bare table, then the
HNSW indexes the product builds, each timed; and the CPU seconds of the server's processes,
which on a shared machine measure the work where wall time measures the neighbours too."""

from __future__ import annotations

import contextlib
import os
import time
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import asyncpg

from bench.common.databases import libpq
from bench.importing.corpus import ACCOUNT_ID
from config.settings import Settings
from data.model_indexes import HNSW_EF_CONSTRUCTION, HNSW_M, build_memory


class ServerCpu:
    """CPU seconds of the embedded server's processes (postmaster, backends, parallel
    workers, exited ones included): on a shared machine, wall time measures the neighbours
    too, CPU time only the work. None behind a DATABASE_URL that names no local data
    directory (a socket directory holding postmaster.pid, as the embedded server's does)."""

    def __init__(self, settings: Settings) -> None:
        pid_file = settings.data_dir / "pg" / "postmaster.pid"
        if settings.database_url is not None:
            hosts = parse_qs(urlsplit(settings.database_url).query).get("host", [])
            pid_file = Path(hosts[0]) / "postmaster.pid" if hosts else Path("/nonexistent")
        self.pid = None
        if pid_file.exists():
            self.pid = int(pid_file.read_text().split()[0])

    @staticmethod
    def _ticks(pid: int, children: bool) -> int:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        return sum(int(f) for f in fields[11 : 15 if children else 13])

    def seconds(self) -> float | None:
        if self.pid is None:
            return None
        total = self._ticks(self.pid, children=True)
        kids = Path(f"/proc/{self.pid}/task/{self.pid}/children").read_text().split()
        for kid in kids:
            with contextlib.suppress(OSError):
                total += self._ticks(int(kid), children=True)
        return total / os.sysconf("SC_CLK_TCK")


@dataclass
class Floor:
    copy_s: float
    index_s: float
    second_index_s: float
    cpu_s: list[float] | None  # server CPU after the COPY, the first index, the second

    @property
    def total_s(self) -> float:
        return self.copy_s + self.index_s


async def floor(
    url: str, rows_file: Path, columns: list[str], chunks: int, cpu: ServerCpu
) -> Floor:
    """A raw COPY of the chunk rows into a bare copy of the table (no index, no constraint),
    then one HNSW index as the product builds it (same parameters, same memory); then, apart,
    the second one the product builds (the account's own: same rows, its own predicate)."""
    conn = await asyncpg.connect(libpq(url))
    spent: list[float | None] = []
    server_before = cpu.seconds()

    def mark() -> None:
        now = cpu.seconds()
        spent.append(None if now is None or server_before is None else now - server_before)

    try:
        await conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
        await conn.execute(
            "CREATE TABLE floor_chunks (account_id uuid, id uuid, runtime_session_id uuid,"
            " source_kind text, source_id uuid, chunk_index int, occurred_at timestamptz,"
            " role text, content text, content_hash bytea, redaction_state text,"
            " embedding_state text, embedding vector, embedding_model text,"
            " embedded_at timestamptz)"
        )
        started = time.perf_counter()
        await conn.copy_to_table("floor_chunks", source=rows_file, columns=columns)
        copy_s = time.perf_counter() - started
        mark()
        await conn.execute("SET statement_timeout = 0")
        await conn.execute(f"SET maintenance_work_mem = '{build_memory(chunks, 384) // 1024}kB'")
        seconds = []
        for predicate in ("embedding_model IS NOT NULL", f"account_id = '{ACCOUNT_ID}'"):
            started = time.perf_counter()
            await conn.execute(
                "CREATE INDEX ON floor_chunks USING hnsw"
                " ((embedding::vector(384)) vector_cosine_ops)"
                f" WITH (m = {HNSW_M}, ef_construction = {HNSW_EF_CONSTRUCTION})"
                f" WHERE redaction_state = 'clear' AND embedding_state = 'embedded'"
                f" AND {predicate}"
            )
            seconds.append(time.perf_counter() - started)
            mark()
        cpus = None if None in spent else [x for x in spent if x is not None]
        return Floor(copy_s, seconds[0], seconds[1], cpus)
    finally:
        await conn.close()
