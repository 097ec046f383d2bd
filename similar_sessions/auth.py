"""API keys at the edge: `Authorization: Bearer <key>` turned into a Principal for every API
request, or answered 401/403 (503 when the database cannot say, 429 past the key's or the
account's rate, or with the account's queue full); an admitted request then waits its turn
among the accounts (similar_sessions/fair_queue.py)."""

from __future__ import annotations

from limits import RateLimitItem
from sqlalchemy.ext.asyncio import AsyncEngine
from starlette.requests import HTTPConnection
from starlette.responses import Response
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from data.accounts import Principal, hash_key, principal_for_key
from data.errors import Unavailable
from observability.metrics import REFUSED
from similar_sessions.errors import error, unavailable
from similar_sessions.fair_queue import FairQueue, QueueFull, seats_for
from similar_sessions.graphql_app import is_graphiql_page
from similar_sessions.rate_limit import describe

REQUIRED_SCOPE = "view_runtime_sessions"
INGEST_SCOPE = "ingest_runtime_sessions"  # POST /v1/traces; neither scope implies the other
INGEST_PATH = "/v1/traces"
INGEST_BYTES_PER_SEAT = 4 * 1024**2  # an ingest request holds one seat more per 4 MiB it sends
MCP_PATH = (
    "/mcp"  # authenticated here; each tool call is admitted by similar_sessions/mcp_admission
)


class Unauthorized(Exception):
    """No key, or a key that is unknown or revoked (answered 401)."""


class Forbidden(Exception):
    """A valid key without the scope the route needs (answered 403)."""


def bearer_key(connection: HTTPConnection) -> str | None:
    header = connection.headers.get("authorization", "")
    scheme, _, key = header.partition(" ")
    if scheme.lower() != "bearer" or not key.strip():
        return None
    return key.strip()


def scope_for(path: str) -> str:
    """The scope a route needs: ingest for the OTLP receiver, view for everything else."""
    return INGEST_SCOPE if path == INGEST_PATH else REQUIRED_SCOPE


async def authenticate(engine: AsyncEngine, connection: HTTPConnection) -> Principal:
    """The caller behind the request's key, with the scope its route needs."""
    key = bearer_key(connection)
    if key is None or len(key) > 512:
        raise Unauthorized
    principal = await principal_for_key(engine, key)
    if principal is None:
        raise Unauthorized
    if scope_for(connection.scope["path"]) not in principal.scopes:
        raise Forbidden
    return principal


class AuthMiddleware:
    """Authenticates every API request; GraphiQL's page itself needs no key."""

    PROTECTED = ("/graphql", "/api/", INGEST_PATH, MCP_PATH)

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or not scope["path"].startswith(self.PROTECTED):
            await self.app(scope, receive, send)
            return
        connection = HTTPConnection(scope)
        if is_graphiql_page(connection):
            await self.app(scope, receive, send)
            return
        try:
            principal = await authenticate(connection.app.state.services.engine, connection)
        except Unauthorized:
            response: Response = error(
                401, "unauthorized", "a valid API key is required: Authorization: Bearer <key>"
            )
            response.headers["WWW-Authenticate"] = "Bearer"
        except Forbidden:
            needed = scope_for(scope["path"])
            response = error(403, "forbidden", f"this API key lacks the {needed} scope")
        except Unavailable as exc:
            response = unavailable(exc)
        else:
            scope.setdefault("state", {})["principal"] = principal
            if scope["path"] == MCP_PATH:
                await self.app(scope, receive, send)
            else:
                await self.admitted(connection, receive, send)
            return
        await response(scope, receive, send)

    async def admitted(self, connection: HTTPConnection, receive: Receive, send: Send) -> None:
        """The request served in its account's turn, holding the seats it costs, if its key and
        its account are within their rates; else 429 saying which bound: a rate, or the
        account's queue full (a request the key's rate refuses is not counted towards the
        account's)."""
        key_id = hash_key(bearer_key(connection) or "").hex()  # counted by hash, not the key
        principal: Principal = connection.scope["state"]["principal"]
        account = str(principal.account_id)  # every key of an account is one flow
        state = connection.app.state
        scope = connection.scope
        ingesting = scope["path"] == INGEST_PATH  # bound by its own rates (spans, bytes)
        if not ingesting and (refused := await state.rate_limits.admit(key_id)) is not None:
            bound, response = "rate_limit", rate_limited("key", *refused)
        elif not ingesting and (refused := await state.account_rates.admit(account)) is not None:
            bound, response = "account_rate_limit", rate_limited("account", *refused)
        else:
            body, replayed = await buffered(receive)
            fair: FairQueue = state.fair_queue
            try:
                cost = (
                    1 + len(body) // INGEST_BYTES_PER_SEAT
                    if ingesting
                    else seats_for(scope["path"], body, scope.get("query_string", b""))
                )
                async with fair.seated(account, cost):
                    await self.app(scope, replayed, send)
                return
            except QueueFull as full:
                bound, response = "account_queue", queue_full(full, fair.queue_length)
        REFUSED.labels(bound).inc()
        await response(scope, receive, send)


async def buffered(receive: Receive) -> tuple[bytes, Receive]:
    """The request's body, read whole (BodySizeLimit bounds it), and a receive that gives it
    to the app again, then whatever comes after (a disconnect)."""
    parts: list[bytes] = []
    while True:
        message = await receive()
        if message["type"] != "http.request":
            return b"", replaying(message, receive)
        parts.append(message.get("body", b""))
        if not message.get("more_body", False):
            break
    body = b"".join(parts)
    return body, replaying({"type": "http.request", "body": body, "more_body": False}, receive)


def replaying(first: Message, receive: Receive) -> Receive:
    sent = False

    async def replay() -> Message:
        nonlocal sent
        if not sent:
            sent = True
            return first
        return await receive()

    return replay


def queue_full(full: QueueFull, limit: int) -> Response:
    """429 naming the account's queue and its setting, with Retry-After."""
    response = error(
        429,
        "account_queue_full",
        f"this account has {full.waiting} requests waiting for their turn (per process; at "
        f"most {limit}, SIMILAR_SESSIONS_ACCOUNT_QUEUE); retry in {full.retry_after_s} s",
        limit=limit,
    )
    response.headers["Retry-After"] = str(full.retry_after_s)
    return response


RATE_SETTINGS = {
    "key": "SIMILAR_SESSIONS_RATE_LIMIT",
    "account": "SIMILAR_SESSIONS_ACCOUNT_RATE_LIMIT",
}


def rate_limited(whose: str, rate: RateLimitItem, retry_after_s: int) -> Response:
    """429 naming the rate the key or its account went past and its setting, with
    Retry-After."""
    limit = describe(rate)
    subject = "this API key" if whose == "key" else "this account's keys together"
    response = error(
        429,
        "rate_limited",
        f"{subject} made more than {limit} requests (per process; {RATE_SETTINGS[whose]}); "
        f"retry in {retry_after_s} s",
        limit=limit,
    )
    response.headers["Retry-After"] = str(retry_after_s)
    return response
