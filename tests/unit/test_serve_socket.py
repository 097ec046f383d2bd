"""The socket `serve` listens on: every accepted connection sends without Nagle's delay (a
response written in two parts would otherwise wait for the client's delayed ACK)."""

from __future__ import annotations

import socket

from similar_sessions.serve import bind


def test_accepted_connections_have_tcp_nodelay() -> None:
    listener = bind("127.0.0.1", 0)
    try:
        listener.listen(1)
        client = socket.create_connection(listener.getsockname())
        accepted, _ = listener.accept()
        try:
            assert accepted.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY) != 0
        finally:
            accepted.close()
            client.close()
    finally:
        listener.close()
