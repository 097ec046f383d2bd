"""The app served for real (uvicorn in a thread) and Debian's Chromium, for the browser tests."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import replace

import uvicorn

from config.settings import Settings
from indexer.embedders import Registry
from similar_sessions.app import create_app

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-dev-shm-usage",
    "--disable-background-networking",
    "--disable-component-update",
    "--no-first-run",
]
START_TIMEOUT_S = 20.0


@contextmanager
def serving(database_url: str, embedders: Registry | None = None) -> Iterator[str]:
    """The app on 127.0.0.1 and a free port, against `database_url`, embedding search texts
    with `embedders` when given (else the app's own); yields its base URL."""
    settings = Settings.from_env(
        {"DATABASE_URL": database_url, "SIMILAR_SESSIONS_LOG_LEVEL": "WARNING"}
    )
    app = create_app(settings, run_migrations=False)
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    server = uvicorn.Server(
        uvicorn.Config(app, log_level="warning", access_log=False, lifespan="on")
    )
    thread = threading.Thread(
        target=server.run, kwargs={"sockets": [sock]}, name="console-server", daemon=True
    )
    thread.start()
    deadline = time.monotonic() + START_TIMEOUT_S
    while not server.started:
        if not thread.is_alive() or time.monotonic() > deadline:
            sock.close()
            raise RuntimeError("the console server did not start")
        time.sleep(0.02)
    if embedders is not None:  # the services are built at start-up, before any request
        app.state.services = replace(app.state.services, embedders=embedders)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(timeout=START_TIMEOUT_S)
        sock.close()
