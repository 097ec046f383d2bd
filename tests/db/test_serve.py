"""`serve --workers N`: N uvicorn worker processes on one bound socket, one database."""

from __future__ import annotations

import asyncio
import os
import signal
import socket
import sys

import httpx
import psutil
from sqlalchemy.ext.asyncio import AsyncEngine

from tests.support.comparisons import bearer
from tests.support.world import pair_world


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _is_worker(process: psutil.Process) -> bool:
    """A uvicorn worker (multiprocessing also starts a resource tracker)."""
    try:
        return "spawn_main" in " ".join(process.cmdline())
    except psutil.Error:
        return False


async def _until_both_workers_answer(base: str, pid: int) -> None:
    async with httpx.AsyncClient(base_url=base, timeout=5) as http:
        for _ in range(300):
            workers = [c for c in psutil.Process(pid).children() if _is_worker(c)]
            try:
                health = await http.get("/healthz")
                if health.status_code == 200 and len(workers) == 2:
                    return
            except httpx.TransportError:
                pass
            await asyncio.sleep(0.2)
    raise AssertionError("the two workers never answered")


async def test_serve_with_two_workers_answers_on_the_bound_port(
    engine: AsyncEngine, database_url: str
) -> None:
    viewed, key = await pair_world(engine)
    port = free_port()
    env = {**os.environ, "DATABASE_URL": database_url, "SIMILAR_SESSIONS_RATE_LIMIT": "off"}
    env.pop("PYTHONMALLOC", None)
    server = await asyncio.create_subprocess_exec(
        *[sys.executable, "-m", "similar_sessions.cli", "serve", "--port", str(port)],
        *["--workers", "2"],
        env=env,
        stderr=asyncio.subprocess.PIPE,
    )
    try:
        assert server.stderr is not None
        line = (await asyncio.wait_for(server.stderr.readline(), 60)).decode()
        assert line.startswith(f"serving on http://127.0.0.1:{port} with 2 worker processes")
        base = f"http://127.0.0.1:{port}"
        await _until_both_workers_answer(base, server.pid)
        # started again under glibc's malloc (config/heap.py), the workers with it
        for process in [psutil.Process(server.pid), *psutil.Process(server.pid).children()]:
            if process.pid == server.pid or _is_worker(process):
                assert process.environ().get("PYTHONMALLOC") == "malloc"
        async with httpx.AsyncClient(base_url=base, timeout=10) as http:
            route = f"/api/v1/runtime-sessions/{viewed}/similar"
            for _ in range(6):
                answer = await http.get(route, headers=bearer(key))
                assert answer.status_code == 200 and answer.json()["results"]
    finally:
        server.send_signal(signal.SIGINT)
        try:
            await asyncio.wait_for(server.wait(), 30)
        except TimeoutError:
            server.kill()
            await server.wait()
    assert server.returncode == 0
