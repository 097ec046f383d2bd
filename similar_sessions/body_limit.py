"""A cap on request bodies: a larger one is answered 413 naming the limit, unread. Routes
that take larger bodies (the OTLP receiver) have their own cap."""

from __future__ import annotations

from collections.abc import Mapping

from starlette.datastructures import Headers
from starlette.responses import JSONResponse
from starlette.types import ASGIApp, Message, Receive, Scope, Send

MAX_BODY_BYTES = 64 * 1024


class BodyTooLarge(Exception):
    pass


class BodySizeLimit:
    def __init__(
        self, app: ASGIApp, max_bytes: int = MAX_BODY_BYTES, paths: Mapping[str, int] | None = None
    ) -> None:
        self.app, self.default, self.paths = app, max_bytes, dict(paths or {})

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        limit = self.paths.get(scope["path"], self.default)
        declared = Headers(scope=scope).get("content-length")
        if declared is not None and declared.isdigit() and int(declared) > limit:
            await self._refuse(scope, receive, send, limit)
            return
        seen, started = 0, False

        async def counting_receive() -> Message:
            nonlocal seen
            message = await receive()
            seen += len(message.get("body", b""))
            if seen > limit:
                raise BodyTooLarge
            return message

        async def tracking_send(message: Message) -> None:
            nonlocal started
            started = started or message["type"] == "http.response.start"
            await send(message)

        try:
            await self.app(scope, counting_receive, tracking_send)
        except BodyTooLarge:
            if not started:
                await self._refuse(scope, receive, send, limit)

    async def _refuse(self, scope: Scope, receive: Receive, send: Send, limit: int) -> None:
        response = JSONResponse(
            {
                "error": "request_too_large",
                "detail": f"request bodies are limited to {limit} bytes",
                "limit": limit,
            },
            status_code=413,
        )
        await response(scope, receive, send)
