"""`similar-sessions serve`: the port is bound first (a taken port is one clear line), the
database started and migrated once, then uvicorn serves the app from its factory, in this
process or in N worker processes sharing the bound socket."""

from __future__ import annotations

import asyncio
import errno
import os
import signal
import socket
import subprocess
import sys

from config.heap import tune as tune_heap
from config.settings import Settings
from data.engine import make_engine
from data.migrate import migrate
from data.server import resolve_url

APP_FACTORY = "similar_sessions.app:create_app"  # called with no arguments: settings from env


class PortTaken(OSError):
    """The address to serve on cannot be bound."""


def bind(host: str, port: int) -> socket.socket:
    """A socket bound to host:port, as uvicorn binds it, or PortTaken saying why not.
    TCP_NODELAY is set here, inherited by every accepted connection: uvloop sets it on the
    connections of a server it binds itself, not on those of a socket it is handed, and
    without it a response written in two parts waits for the client's delayed ACK (about
    40 ms a request)."""
    sock = socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    try:
        sock.bind((host, port))
    except OSError as exc:
        sock.close()
        if exc.errno == errno.EADDRINUSE:
            raise PortTaken(
                f"port {port} on {host} is taken (something else listens there); "
                "choose another with --port"
            ) from None
        raise PortTaken(f"cannot listen on {host}:{port}: {exc.strerror or exc}") from None
    sock.set_inheritable(True)
    return sock


async def _migrate(url: str, settings: Settings) -> None:
    engine = make_engine(url, pool_size=1, pool_timeout_s=settings.pool_timeout_s)
    try:
        await migrate(engine)
    finally:
        await engine.dispose()


def serve(settings: Settings, host: str, port: int, workers: int) -> int:
    import uvicorn
    from uvicorn.supervisors import Multiprocess

    sock = bind(host, port)
    workers_heap = tune_heap()  # before the server's threads allocate (config/heap.py)
    url = resolve_url(settings.database_url, settings.data_dir)  # starts the embedded server
    os.environ.update(workers_heap)  # for the workers, not the embedded server's processes
    os.environ["DATABASE_URL"] = url  # the workers open this database and start no server
    asyncio.run(_migrate(url, settings))
    # log_config=None: uvicorn's records go through our JSON formatter (config/logs.py).
    config = uvicorn.Config(
        APP_FACTORY,
        factory=True,
        host=host,
        port=port,
        workers=workers,
        log_config=None,
        log_level=settings.log_level.lower(),
    )
    print(
        f"serving on http://{host}:{port} with {workers} worker process"
        f"{'es' if workers > 1 else ''} (console at /console/runtime-sessions)",
        file=sys.stderr,
        flush=True,
    )
    indexer = start_indexer() if settings.serve_indexes else None
    try:
        if workers == 1:
            uvicorn.Server(config).run(sockets=[sock])
        else:
            Multiprocess(config, sockets=[sock]).run()
    finally:
        if indexer is not None:
            stop_indexer(indexer)
    return 0


def start_indexer() -> subprocess.Popen[bytes]:
    """`index --watch` beside the server (SIMILAR_SESSIONS_SERVE_INDEXES), on the database it
    serves (DATABASE_URL is set by then): it indexes what the server ingests as it commits.
    On Linux it is ended with the server, however the server ends."""
    print("indexing beside it (index --watch)", file=sys.stderr, flush=True)
    return subprocess.Popen(
        [sys.executable, "-m", "similar_sessions.cli", "index", "--watch"],
        stdin=subprocess.DEVNULL,
        preexec_fn=_ended_with_parent if sys.platform == "linux" else None,
    )


def _ended_with_parent() -> None:
    """In the child, before it runs: SIGTERM when the server's process dies (prctl)."""
    import ctypes

    pr_set_pdeathsig = 1
    ctypes.CDLL("libc.so.6", use_errno=True).prctl(pr_set_pdeathsig, signal.SIGTERM)


def stop_indexer(indexer: subprocess.Popen[bytes]) -> None:
    """SIGTERM (it finishes its batch), then SIGKILL if it has not ended in 10 s."""
    indexer.terminate()
    try:
        indexer.wait(timeout=10)
    except subprocess.TimeoutExpired:
        indexer.kill()
        indexer.wait()
