"""Request durations by route template (never the path itself: it holds session ids)."""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

from starlette.routing import BaseRoute, Match, Mount
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from observability.metrics import HTTP_DURATION

UNMATCHED = "<unmatched>"
METHODS = frozenset({"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"})


def route_template(routes: Sequence[BaseRoute], scope: Scope) -> str | None:
    """The template of the route the request goes to, through mounts
    (`/api/v1/runtime-sessions/{runtime_session_id}/similar`, `/console/static/{path}`)."""
    for route in routes:
        match, child = route.matches(scope)
        if match == Match.NONE:
            continue
        if isinstance(route, Mount):
            inner = route_template(route.routes, {**scope, **child}) if route.routes else None
            return route.path + (inner or "/{path}")
        path: Any = getattr(route, "path", None)
        return str(path) if path is not None else None
    return None


class HttpMetrics:
    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = time.perf_counter()
        route = route_template(scope["app"].routes, scope) or UNMATCHED
        method = scope["method"] if scope["method"] in METHODS else "OTHER"
        status = 500

        async def send_seen(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = int(message["status"])
            await send(message)

        try:
            await self.app(scope, receive, send_seen)
        finally:
            elapsed = time.perf_counter() - started
            HTTP_DURATION.labels(route, method, str(status)).observe(elapsed)
