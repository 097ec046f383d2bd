"""A `similar-sessions serve` of this checkout in a process of its own, on a free port."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx

from bench.common.databases import libpq
from bench.common.paths import ROOT


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def serve(url: str, env: dict[str, str], log: Path) -> tuple[subprocess.Popen[bytes], str]:
    """The server on the database at `url` with these settings, once it answers /healthz;
    its base URL. This checkout's code, whichever checkout the installed entry point names."""
    port = free_port()
    proc = subprocess.Popen(
        [sys.executable, "-m", "similar_sessions.cli", "serve", "--port", str(port)],
        cwd=ROOT,
        env={**os.environ, **env, "DATABASE_URL": libpq(url), "PYTHONPATH": str(ROOT)},
        stdout=subprocess.DEVNULL,
        stderr=log.open("wb"),
    )
    base = f"http://127.0.0.1:{port}"
    return proc, answering(proc, base, log)


def answering(proc: subprocess.Popen[bytes], base: str, log: Path) -> str:
    """`base` once the server started in `proc` answers GET /healthz with 200 (30 s at most;
    else it is killed and RuntimeError names its log)."""
    for _ in range(300):
        try:
            if httpx.get(base + "/healthz").status_code == 200:
                return base
        except httpx.TransportError:
            pass
        time.sleep(0.1)
    proc.kill()
    raise RuntimeError(f"the server did not start; see {log}")
