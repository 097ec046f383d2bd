"""Where an MCP tool call meets the API's doors: it costs what its GraphQL twin costs.

`price_call` builds the twin query (similar_sessions/mcp_tools.py) and prices it as /graphql
prices a request (schema/cost.py, through kept documents): its seats, the comparisons and
replay turns it may run. `admitted` then passes the call through the doors every request
passes (similar_sessions/admission.py: the key's and the account's rates, then its seats in
the account's turn); the /mcp endpoint is authenticated by AuthMiddleware, not admitted:
each tool call is, here, over HTTP and stdio alike."""

from __future__ import annotations

import contextlib
import json
from collections.abc import AsyncIterator, Mapping
from functools import cache, lru_cache
from typing import Any
from uuid import UUID

from graphql import GraphQLSchema

from data.accounts import Principal
from observability.metrics import REFUSED
from resolvers.budgets import MAX_SIMILAR_PER_REQUEST, Cost
from resolvers.errors import LimitExceeded
from schema.documents import Documents
from schema.query import make_schema
from similar_sessions.admission import Doors, rated, seated
from similar_sessions.mcp_tools import twin

_DOCUMENTS = Documents()  # the twins' texts, parsed once each


@cache
def _graphql_schema() -> GraphQLSchema:
    return make_schema()._schema


def price_call(tool: str, arguments: Mapping[str, Any]) -> Cost:
    """The price of a tool call: its GraphQL twin's, as /graphql prices it."""
    if "session_id" in arguments:  # an id does not change a price; a conversation id is no UUID
        arguments = {**arguments, "session_id": str(UUID(int=0))}
    return _priced(tool, json.dumps(arguments, sort_keys=True))


@lru_cache(maxsize=256)  # an agent asks the same few calls again and again
def _priced(tool: str, given: str) -> Cost:
    document, variables = twin(tool, json.loads(given))
    return _DOCUMENTS.cost(_graphql_schema(), document, None, variables)


def within_budgets(tool: str, cost: Cost, replay_turns: int) -> None:
    """LimitExceeded naming the budget's rule when the call could run more than a request may."""
    if cost.refusal is not None:
        REFUSED.labels(cost.refusal.bound).inc()
        refusal = cost.refusal  # a twin is ours, within the bounds: this is not expected
        raise LimitExceeded(tool, refusal.message, refusal.limit or 0, refusal.bound)
    if cost.comparisons > MAX_SIMILAR_PER_REQUEST:
        REFUSED.labels("comparisons").inc()
        why = "could run more comparisons than a request may"
        raise LimitExceeded(tool, why, MAX_SIMILAR_PER_REQUEST, "MAX_SIMILAR_PER_REQUEST")
    if cost.replay_turns > replay_turns:
        REFUSED.labels("replay_turns").inc()
        why = f"could read {cost.replay_turns} replay turns"
        raise LimitExceeded(tool, why, replay_turns, "SIMILAR_SESSIONS_REPLAY_TURNS")


@contextlib.asynccontextmanager
async def admitted(
    doors: Doors,
    replay_turns: int,
    principal: Principal,
    key_id: str,
    tool: str,
    arguments: Mapping[str, Any],
) -> AsyncIterator[None]:
    """Run the block as the call's turn, holding its seats, if it is within the budgets and
    the key's and the account's rates; else LimitExceeded or admission's Refused naming the
    bound."""
    cost = price_call(tool, arguments)
    within_budgets(tool, cost, replay_turns)
    await rated(doors, principal, key_id)
    async with seated(doors, principal, cost, "mcp"):
        yield
