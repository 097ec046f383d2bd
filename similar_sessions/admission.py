"""Admission at the edge, after authentication (similar_sessions/auth.py): the key's and the
account's rates (not for the OTLP receiver, which its own rates bound), then the request's
Cost, priced once from what it asks (a GraphQL operation by schema/cost.py through the
schema's kept documents, a REST route by its path, an ingest request by its bytes), then its
seats held in its account's fair queue (similar_sessions/fair_queue.py) while it runs. Past a
rate or with the account's queue full: 429 with Retry-After, naming the bound and its
setting. The Cost rides with the request: the budgets and the refusals read it."""

from __future__ import annotations

import contextlib
import json
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any
from urllib.parse import parse_qs

from limits import RateLimitItem
from starlette.datastructures import State
from starlette.requests import HTTPConnection
from starlette.responses import Response
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from data.accounts import Principal, hash_key
from observability.metrics import ADMISSION_WAIT, REFUSED
from resolvers.budgets import Cost
from schema.cost import MANY, ONE, WHOLE_PASS
from similar_sessions.auth import INGEST_PATH, MCP_PATH, bearer_key
from similar_sessions.errors import error
from similar_sessions.fair_queue import FairQueue, QueueFull
from similar_sessions.rate_limit import RateLimits, describe

INGEST_BYTES_PER_SEAT = 4 * 1024**2  # an ingest request holds one seat more per 4 MiB it sends
# The REST routes' seats, as their GraphQL twins' (`failureModes`, `searchSessions`); the
# similar sessions of one session hold one.
REST_SEATS = {
    "/api/v1/runtime-sessions/failure-modes": WHOLE_PASS,
    "/api/v1/runtime-sessions/search": MANY,
}
RATE_SETTINGS = {
    "key": "SIMILAR_SESSIONS_RATE_LIMIT",
    "account": "SIMILAR_SESSIONS_ACCOUNT_RATE_LIMIT",
}


@dataclass(frozen=True, slots=True)
class Doors:
    """The process's rates and fair queue, which every edge's requests pass (app.state's)."""

    rate_limits: RateLimits
    account_rates: RateLimits
    fair_queue: FairQueue

    @classmethod
    def of(cls, state: State) -> Doors:
        return cls(state.rate_limits, state.account_rates, state.fair_queue)


class Refused(Exception):
    """A request not admitted: the bound that refused it (the refusals' metric label), its
    code, what it says and when to retry; `response` is its 429 answer."""

    def __init__(
        self, bound: str, code: str, message: str, retry_after_s: int, limit: int | str
    ) -> None:
        super().__init__(message)
        self.bound, self.code, self.retry_after_s, self.limit = bound, code, retry_after_s, limit

    @property
    def response(self) -> Response:
        response = error(429, self.code, str(self), limit=self.limit)
        response.headers["Retry-After"] = str(self.retry_after_s)
        return response


@contextlib.asynccontextmanager
async def admit_operation(
    state: State,
    principal: Principal,
    key: str,
    query: str,
    variables: dict[str, Any] | None = None,
    operation_name: str | None = None,
) -> AsyncIterator[Cost]:
    """Admit a GraphQL operation as /graphql admits it: the rates of `key` and its account,
    then its Cost (yielded) while it holds its seats; Refused when a bound refuses it. Run it
    by `state.schema` with that Cost in its context's RequestBudget, so that it is priced and
    parsed once."""
    doors = Doors.of(state)
    await rated(doors, principal, hash_key(key).hex())
    cost = graphql_cost(state, query, variables, operation_name)
    async with seated(doors, principal, cost, "graphql"):
        yield cost


def graphql_cost(
    state: State, query: str, variables: dict[str, Any] | None, operation_name: str | None
) -> Cost:
    """The Cost of a GraphQL operation, parsed through the schema's kept documents."""
    cost: Cost = state.documents.cost(state.schema._schema, query, operation_name, variables)
    return cost


async def rated(doors: Doors, principal: Principal, key_id: str) -> None:
    """Count the request against its key's rate (`key_id`: the key's hash, never the key),
    then its account's (a request the key's rate refuses is not counted towards the
    account's); Refused past either."""
    if (refused := await doors.rate_limits.admit(key_id)) is not None:
        raise _counted(rate_limited("key", *refused))
    account = str(principal.account_id)  # every key of an account is one flow
    if (refused := await doors.account_rates.admit(account)) is not None:
        raise _counted(rate_limited("account", *refused))


@contextlib.asynccontextmanager
async def seated(doors: Doors, principal: Principal, cost: Cost, edge: str) -> AsyncIterator[None]:
    """Hold the seats the Cost says in the account's fair queue while the block runs, waiting
    for them in turn (the wait counted by `edge`, a label of ADMISSION_WAIT); Refused when the
    account's queue is full."""
    fair = doors.fair_queue
    async with contextlib.AsyncExitStack() as stack:
        arrived = time.perf_counter()
        try:
            await stack.enter_async_context(fair.seated(str(principal.account_id), cost.seats))
        except QueueFull as full:
            raise _counted(queue_full(full, fair.queue_length)) from None
        ADMISSION_WAIT.labels(edge).observe(time.perf_counter() - arrived)
        yield


def _counted(refused: Refused) -> Refused:
    REFUSED.labels(refused.bound).inc()
    return refused


class AdmissionMiddleware:
    """Admits every authenticated request (one AuthMiddleware gave a principal) in its turn."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        principal = scope.get("state", {}).get("principal") if scope["type"] == "http" else None
        if principal is None or scope["path"] == MCP_PATH:  # MCP: each tool call is admitted
            await self.app(scope, receive, send)
            return
        state: State = scope["app"].state
        doors = Doors.of(state)
        try:
            if scope["path"] != INGEST_PATH:  # bound by its own rates (spans, bytes)
                key = bearer_key(HTTPConnection(scope)) or ""
                await rated(doors, principal, hash_key(key).hex())
            body, replayed = await buffered(receive)
            cost = scope["state"]["cost"] = cost_of(state, scope, body)
            async with seated(doors, principal, cost, edge_of(scope["path"])):
                await self.app(scope, replayed, send)
        except Refused as refused:
            await refused.response(scope, receive, send)


def edge_of(path: str) -> str:
    """The edge a request came by, as ADMISSION_WAIT labels it."""
    return {INGEST_PATH: "ingest", "/graphql": "graphql"}.get(path, "rest")


def cost_of(state: State, scope: Scope, body: bytes) -> Cost:
    """What a request costs, from its route and what it asks."""
    path = scope["path"]
    if path == INGEST_PATH:
        return Cost(seats=1 + len(body) // INGEST_BYTES_PER_SEAT, bytes=len(body))
    if path != "/graphql":
        return Cost(seats=REST_SEATS.get(path, ONE))
    asked = graphql_asked(scope, body)
    if asked is None:
        return Cost()  # strawberry answers what is wrong with it
    return graphql_cost(state, *asked)


def graphql_asked(
    scope: Scope, body: bytes
) -> tuple[str, dict[str, Any] | None, str | None] | None:
    """The query, variables and operation name of a GraphQL request (a JSON body, or GET's
    parameters), None when it holds no single operation that reads as one."""
    try:
        if scope["method"] == "GET":
            params = parse_qs(scope.get("query_string", b"").decode("latin-1"))
            asked: Any = {name: values[-1] for name, values in params.items()}
            if isinstance(asked.get("variables"), str):
                asked["variables"] = json.loads(asked["variables"])
        else:
            asked = json.loads(body)
    except (ValueError, RecursionError):
        return None
    if not isinstance(asked, dict) or not isinstance(asked.get("query"), str):
        return None
    variables, name = asked.get("variables"), asked.get("operationName")
    return (
        asked["query"],
        variables if isinstance(variables, dict) else None,
        name if isinstance(name, str) else None,
    )


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


def queue_full(full: QueueFull, limit: int) -> Refused:
    """The refusal naming the account's queue and its setting, with when to retry."""
    return Refused(
        "account_queue",
        "account_queue_full",
        f"this account has {full.waiting} requests waiting for their turn (per process; at "
        f"most {limit}, SIMILAR_SESSIONS_ACCOUNT_QUEUE); retry in {full.retry_after_s} s",
        full.retry_after_s,
        limit,
    )


def rate_limited(whose: str, rate: RateLimitItem, retry_after_s: int) -> Refused:
    """The refusal naming the rate the key or its account went past and its setting, with when
    to retry."""
    limit = describe(rate)
    subject = "this API key" if whose == "key" else "this account's keys together"
    return Refused(
        "rate_limit" if whose == "key" else "account_rate_limit",
        "rate_limited",
        f"{subject} made more than {limit} requests (per process; {RATE_SETTINGS[whose]}); "
        f"retry in {retry_after_s} s",
        retry_after_s,
        limit,
    )
