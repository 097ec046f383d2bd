"""Console routes: the sessions page, its static files, and the headers that lock them down."""

from __future__ import annotations

import functools
from importlib.resources import files

from starlette.exceptions import HTTPException
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import PlainTextResponse, RedirectResponse, Response
from starlette.routing import BaseRoute, Mount, Route
from starlette.staticfiles import StaticFiles
from starlette.types import ASGIApp, Message, Receive, Scope, Send

PAGE_PATH = "/console/runtime-sessions"
STATIC = ("similar_sessions.console", "static")

CONTENT_SECURITY_POLICY = "; ".join(
    [
        "default-src 'none'",
        "script-src 'self'",
        "style-src 'self'",
        "connect-src 'self'",
        "img-src 'self' data:",
        "base-uri 'none'",
        "form-action 'self'",
        "frame-ancestors 'none'",
    ]
)
# GraphiQL's page at GET /graphql: its bundled fonts are data: URLs, and it sends queries to
# this origin only. Nothing else is relaxed (no inline script or style, no eval).
GRAPHIQL_CONTENT_SECURITY_POLICY = "; ".join(
    [
        "default-src 'none'",
        "script-src 'self'",
        "style-src 'self'",
        "font-src data:",
        "connect-src 'self'",
        "img-src 'self' data:",
        "base-uri 'none'",
        "form-action 'none'",
        "frame-ancestors 'none'",
    ]
)
SECURITY_HEADERS = {
    "content-security-policy": CONTENT_SECURITY_POLICY,
    "x-content-type-options": "nosniff",
    "referrer-policy": "no-referrer",
}


class SecurityHeaders:
    """Adds the console's security headers to every response it sends."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return

        async def send_with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                headers = [
                    (name, value)
                    for name, value in message.get("headers", [])
                    if name.decode("latin-1").lower() not in (*SECURITY_HEADERS, "cache-control")
                ]
                headers += [(k.encode(), v.encode()) for k, v in SECURITY_HEADERS.items()]
                # Revalidate on every load (ETag), so a new release is never half-cached.
                headers.append((b"cache-control", b"no-cache"))
                message["headers"] = headers
            await send(message)

        try:
            await self.app(scope, receive, send_with_headers)
        except HTTPException as exc:
            # Answered here rather than by the app's handler, so a 404 carries the headers too.
            response = PlainTextResponse(exc.detail, exc.status_code, headers=exc.headers)
            await response(scope, receive, send_with_headers)


@functools.cache
def _page_html(name: str = "index.html") -> bytes:
    """A page, read from the package once per process."""
    return files(STATIC[0]).joinpath(STATIC[1], name).read_bytes()


async def sessions_page(request: Request) -> Response:
    """One page for the list and for a session; the script reads `?sessionId=`."""
    return Response(_page_html(), media_type="text/html")


def graphiql_page() -> Response:
    """GraphiQL, served from the package (vendored, no CDN) under its own strict policy."""
    headers = {
        **SECURITY_HEADERS,
        "content-security-policy": GRAPHIQL_CONTENT_SECURITY_POLICY,
        "cache-control": "no-cache",
    }
    return Response(_page_html("graphiql.html"), media_type="text/html", headers=headers)


async def to_console(request: Request) -> Response:
    return RedirectResponse(PAGE_PATH, status_code=307)


routes: list[BaseRoute] = [
    Route("/", to_console, methods=["GET"]),
    Mount(
        "/console",
        routes=[
            Route("/runtime-sessions", sessions_page, methods=["GET"]),
            Mount("/static", app=StaticFiles(packages=[STATIC]), name="console-static"),
        ],
        middleware=[Middleware(SecurityHeaders)],
    ),
]
