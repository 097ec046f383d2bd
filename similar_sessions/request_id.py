"""The request id: the caller's `X-Request-ID` when it is a plain token, else a new one;
bound to every log line and span of the request and returned in the response."""

from __future__ import annotations

import re
import uuid

import structlog
from starlette.datastructures import Headers
from starlette.types import ASGIApp, Message, Receive, Scope, Send

HEADER = "x-request-id"
_PLAIN = re.compile(r"^[A-Za-z0-9._:-]{1,128}$")


def request_id(headers: Headers) -> str:
    """The caller's id when it is 1-128 characters of [A-Za-z0-9._:-], else a fresh one."""
    given = headers.get(HEADER, "")
    return given if _PLAIN.match(given) else uuid.uuid4().hex


class RequestId:
    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        rid = request_id(Headers(scope=scope))
        scope.setdefault("state", {})["request_id"] = rid

        async def send_with_id(message: Message) -> None:
            if message["type"] == "http.response.start":
                headers = [
                    (k, v) for k, v in message.get("headers", []) if k.lower() != b"x-request-id"
                ]
                message = {**message, "headers": [*headers, (b"x-request-id", rid.encode())]}
            await send(message)

        with structlog.contextvars.bound_contextvars(request_id=rid):
            await self.app(scope, receive, send_with_id)
