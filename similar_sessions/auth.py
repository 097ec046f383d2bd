"""API keys at the edge: `Authorization: Bearer <key>` turned into a Principal for every API
request, or answered 401/403 (503 when the database cannot say, 429 past the key's rate or
its requests in progress)."""

from __future__ import annotations

from limits import RateLimitItem
from sqlalchemy.ext.asyncio import AsyncEngine
from starlette.requests import HTTPConnection
from starlette.responses import Response
from starlette.types import ASGIApp, Receive, Scope, Send

from data.accounts import Principal, hash_key, principal_for_key
from data.errors import Unavailable
from observability.metrics import REFUSED
from similar_sessions.errors import error, unavailable
from similar_sessions.graphql_app import is_graphiql_page
from similar_sessions.in_flight import InFlight
from similar_sessions.rate_limit import describe
from similar_sessions.time_share import TimeShare

REQUIRED_SCOPE = "view_runtime_sessions"
IN_FLIGHT_RETRY_AFTER_S = "1"  # the least Retry-After says; a slot frees when a request ends


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


async def authenticate(engine: AsyncEngine, connection: HTTPConnection) -> Principal:
    """The caller behind the request's key, with the scope to view sessions."""
    key = bearer_key(connection)
    if key is None or len(key) > 512:
        raise Unauthorized
    principal = await principal_for_key(engine, key)
    if principal is None:
        raise Unauthorized
    if REQUIRED_SCOPE not in principal.scopes:
        raise Forbidden
    return principal


class AuthMiddleware:
    """Authenticates every API request; GraphiQL's page itself needs no key."""

    PROTECTED = ("/graphql", "/api/")

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
            response = error(403, "forbidden", "this API key lacks the view_runtime_sessions scope")
        except Unavailable as exc:
            response = unavailable(exc)
        else:
            scope.setdefault("state", {})["principal"] = principal
            await self.admitted(connection, receive, send)
            return
        await response(scope, receive, send)

    async def admitted(self, connection: HTTPConnection, receive: Receive, send: Send) -> None:
        """The request served if its account has a slot free and time to spare, and its key
        is within its rate (the guard against one key's abuse), its time in progress then
        charged to the account; else 429 saying which bound (a request refused for want of a
        slot or of time is not counted towards the rate)."""
        key_id = hash_key(bearer_key(connection) or "").hex()  # counted by hash, not the key
        principal: Principal = connection.scope["state"]["principal"]
        account = str(principal.account_id)  # every key of an account shares its bounds
        state = connection.app.state
        in_flight: InFlight = state.in_flight
        time_share: TimeShare = state.time_share
        with in_flight.slot(account) as held:
            if not held:
                bound, response = "in_flight", too_many_in_flight(in_flight.limit)
            elif (wait_s := time_share.retry_after(account)) is not None:
                bound, response = "time_share", over_time_share(time_share.percent, wait_s)
            elif (refused := await state.rate_limits.admit(key_id)) is not None:
                bound, response = "rate_limit", rate_limited(*refused)
            else:
                with time_share.timed(account):
                    await self.app(connection.scope, receive, send)
                return
        REFUSED.labels(bound).inc()
        await response(connection.scope, receive, send)


def too_many_in_flight(limit: int) -> Response:
    """429 naming how many requests of one key may be in progress, with Retry-After."""
    response = error(
        429,
        "too_many_in_flight",
        f"this account has {limit} requests in progress (per process; "
        "SIMILAR_SESSIONS_CONCURRENCY_LIMIT); retry once one is answered",
        limit=limit,
    )
    response.headers["Retry-After"] = IN_FLIGHT_RETRY_AFTER_S
    return response


def over_time_share(percent: int, retry_after_s: int) -> Response:
    """429 naming the share of the process's time the key went past, with Retry-After."""
    response = error(
        429,
        "over_time_share",
        f"this account's requests took more than {percent}% of this process's time while "
        f"others asked (per process; SIMILAR_SESSIONS_TIME_SHARE_PERCENT); retry in "
        f"{retry_after_s} s",
        limit=f"{percent}%",
    )
    response.headers["Retry-After"] = str(retry_after_s)
    return response


def rate_limited(rate: RateLimitItem, retry_after_s: int) -> Response:
    """429 naming the rate the key went past, with Retry-After."""
    limit = describe(rate)
    response = error(
        429,
        "rate_limited",
        f"this API key made more than {limit} requests (per process; "
        f"SIMILAR_SESSIONS_RATE_LIMIT); retry in {retry_after_s} s",
        limit=limit,
    )
    response.headers["Retry-After"] = str(retry_after_s)
    return response
