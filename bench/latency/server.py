"""The server the latency run drives over HTTP: started as `similar-sessions serve` with the
tuning under test, and the lean client that times its routes."""

from __future__ import annotations

import http.client
import json
import subprocess
import urllib.parse
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from bench.common.serving import serve
from resolvers.tuning import Tuning


class Answer(Protocol):
    """What the sections read of a response, from either client."""

    @property
    def status_code(self) -> int: ...

    @property
    def text(self) -> str: ...


class Client(Protocol):
    """What the sections ask of an HTTP client: LeanClient, or httpx's measured beside it."""

    async def get(
        self,
        url: str,
        /,
        *,
        params: dict[str, Any] | None = None,
        headers: dict[str, str] | None = None,
    ) -> Answer: ...


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


def start_server(url: str, tuning: Tuning, log_path: Path) -> tuple[subprocess.Popen[bytes], str]:
    env = {
        "SIMILAR_SESSIONS_LOG_LEVEL": "INFO",
        "SIMILAR_SESSIONS_EXACT_SCAN_MAX_CHUNKS": str(tuning.exact_scan_max_chunks),
        "SIMILAR_SESSIONS_HNSW_EF_SEARCH": str(tuning.ef_search),
        "SIMILAR_SESSIONS_HNSW_OVERFETCH": str(tuning.overfetch),
        "SIMILAR_SESSIONS_VERIFY_TIMEOUT_MS": str(tuning.verify_timeout_ms),
        "SIMILAR_SESSIONS_PAGE_CONNECTIONS": str(tuning.page_connections),
        "SIMILAR_SESSIONS_STATEMENT_TIMEOUT_MS": "60000",
        "SIMILAR_SESSIONS_COMPARISON_TIMEOUT_MS": "60000",
        "SIMILAR_SESSIONS_RATE_LIMIT": "off",  # one key times the route back to back
    }
    return serve(url, env, log_path)
