"""A local OpenAI-compatible `/v1/embeddings` server for the tests: real HTTP on 127.0.0.1,
deterministic vectors (the hash embedder's, at the asked width) and usage (a token a word).

Scripted answers come first, one per request (a status with headers and a body, or a hang
that never answers); after them every request is answered 200."""

from __future__ import annotations

import json
import threading
import time
from collections import deque
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from tests.support.embedders import WordsEmbedder

HANG = "hang"


@dataclass(frozen=True)
class Reply:
    """A scripted answer: a status, its headers and its JSON body, or HANG."""

    status: int | str
    headers: dict[str, str] = field(default_factory=dict)
    body: dict[str, Any] = field(default_factory=dict)


def rate_limited(retry_after_s: int = 1) -> Reply:
    return Reply(
        429,
        {"Retry-After": str(retry_after_s)},
        {"error": {"message": "slow down", "type": "requests", "code": "rate_limit_exceeded"}},
    )


def server_error(status: int = 500, retry_after_ms: int = 1) -> Reply:
    """A 5xx the client may retry at once (`retry-after-ms`), so tests stay fast."""
    return Reply(
        status, {"retry-after-ms": str(retry_after_ms)}, {"error": {"message": "overloaded"}}
    )


@dataclass(frozen=True)
class Seen:
    at: float
    path: str
    authorization: str | None
    body: dict[str, Any]


class FakeOpenAI:
    def __init__(self, native_width: int = 384, usage: bool = True) -> None:
        self.native_width, self.usage = native_width, usage
        self.script: deque[Reply] = deque()
        self.seen: list[Seen] = []
        self.stop = threading.Event()
        self.url = ""

    def answer(self, body: dict[str, Any]) -> dict[str, Any]:
        texts = body["input"]
        width = int(body.get("dimensions") or self.native_width)
        vectors = WordsEmbedder(width).embed(texts)
        answer: dict[str, Any] = {
            "object": "list",
            "model": body["model"],
            "data": [
                {"object": "embedding", "index": i, "embedding": [float(x) for x in v]}
                for i, v in enumerate(vectors)
            ],
        }
        if self.usage:
            tokens = sum(len(t.split()) for t in texts)
            answer["usage"] = {"prompt_tokens": tokens, "total_tokens": tokens}
        return answer


def _handler(fake: FakeOpenAI) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            length = int(self.headers.get("content-length", "0"))
            body = json.loads(self.rfile.read(length) or b"{}")
            fake.seen.append(
                Seen(time.monotonic(), self.path, self.headers.get("authorization"), body)
            )
            reply = fake.script.popleft() if fake.script else Reply(200)
            if reply.status == HANG:
                fake.stop.wait(timeout=10)  # the client gives up first; teardown frees us
                return
            if self.path != "/v1/embeddings":
                reply = Reply(404, body={"error": {"message": "no such route"}})
            payload = json.dumps(fake.answer(body) if reply.status == 200 else reply.body)
            self.send_response(int(reply.status))
            self.send_header("content-type", "application/json")
            for name, value in reply.headers.items():
                self.send_header(name, value)
            self.send_header("content-length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload.encode())

        def log_message(self, format: str, *args: Any) -> None:
            pass

    return Handler


@contextmanager
def fake_openai(native_width: int = 384, usage: bool = True) -> Iterator[FakeOpenAI]:
    """The server on 127.0.0.1 and a free port; `.url` is its base URL (up to /v1)."""
    fake = FakeOpenAI(native_width, usage)
    server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(fake))
    server.daemon_threads = True
    fake.url = f"http://127.0.0.1:{server.server_address[1]}/v1"
    thread = threading.Thread(
        target=server.serve_forever, args=(0.02,), name="fake-openai", daemon=True
    )
    thread.start()
    try:
        yield fake
    finally:
        fake.stop.set()
        server.shutdown()
        server.server_close()
        thread.join(timeout=10)
