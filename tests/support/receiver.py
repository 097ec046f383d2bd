"""A real webhook receiver on loopback: a threaded HTTP server recording each POST (headers
lower-cased, body) and answering the status the test sets, with a body of its choosing."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


@dataclass
class Received:
    path: str
    headers: dict[str, str]
    body: bytes


@dataclass
class Receiver:
    port: int = 0
    status: int = 200
    answer: bytes = b"ok"
    location: str | None = None  # sent as `Location` (with a 3xx status)
    received: list[Received] = field(default_factory=list)
    # set: each request is recorded, then answered only once this is set (a receiver that
    # holds the deliverer mid-delivery)
    hold: threading.Event | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/hook"


@contextmanager
def receiving() -> Iterator[Receiver]:
    receiver = Receiver()

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            length = int(self.headers.get("content-length", "0"))
            body = self.rfile.read(length)
            headers = {k.lower(): v for k, v in self.headers.items()}
            receiver.received.append(Received(self.path, headers, body))
            if receiver.hold is not None:
                receiver.hold.wait(60)
            self.send_response(receiver.status)
            if receiver.location is not None:
                self.send_header("location", receiver.location)
            self.send_header("content-length", str(len(receiver.answer)))
            self.end_headers()
            self.wfile.write(receiver.answer)

        def log_message(self, format: str, *args: object) -> None:  # quiet
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    receiver.port = server.server_address[1]
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield receiver
    finally:
        if receiver.hold is not None:
            receiver.hold.set()
        server.shutdown()
        server.server_close()
