"""Where an MCP tool call meets the API's doors: it costs what its GraphQL twin costs.

`price_call` builds the twin query (similar_sessions/mcp_tools.py) and prices it by the
functions /graphql requests are priced by: seats by `fair_queue.seats_for`, comparisons by
the comparison budget's walk, replay turns by `replay_budget.planned_turns`. `admitted` then
counts the call against the key's and the account's rates and holds its seats in the
account's turn, as AuthMiddleware.admitted does for an HTTP request (the /mcp endpoint is
authenticated there, not admitted: each tool call is, here, over HTTP and stdio alike)."""

from __future__ import annotations

import contextlib
import json
from collections.abc import AsyncIterator, Mapping
from dataclasses import dataclass
from functools import cache, lru_cache
from typing import Any
from uuid import UUID

from graphql import (
    FieldNode,
    FragmentDefinitionNode,
    GraphQLField,
    GraphQLSchema,
    OperationDefinitionNode,
    parse,
)
from graphql.execution.values import get_variable_values
from graphql.utilities import get_operation_ast

from data.accounts import Principal
from observability.metrics import REFUSED
from resolvers.budgets import MAX_SIMILAR_PER_REQUEST
from resolvers.errors import LimitExceeded
from schema.comparison_budget import BUDGETED, WHOLE_BUDGET, Path, Site, walk
from schema.query import make_schema
from schema.replay_budget import planned_turns
from similar_sessions.auth import RATE_SETTINGS
from similar_sessions.fair_queue import FairQueue, QueueFull, seats_for
from similar_sessions.mcp_tools import twin
from similar_sessions.rate_limit import RateLimits, describe


@dataclass(frozen=True, slots=True)
class Price:
    """What a call costs: seats held while it runs, comparisons and replay turns it may run."""

    seats: int
    comparisons: int
    turns: int


class Refused(Exception):
    """A call past a rate or with its account's queue full: `code` and the bound's setting."""

    def __init__(self, code: str, message: str, retry_after_s: int) -> None:
        super().__init__(message)
        self.code, self.retry_after_s = code, retry_after_s


@cache
def _graphql_schema() -> GraphQLSchema:
    return make_schema()._schema


@lru_cache(maxsize=16)  # the twins are a handful of texts; parsing one took 1.5 ms a call
def _operation(document: str) -> OperationDefinitionNode:
    operation = get_operation_ast(parse(document))
    assert operation is not None, "a twin is one operation"
    return operation


def price_call(tool: str, arguments: Mapping[str, Any]) -> Price:
    """The price of a tool call: its GraphQL twin's, by the functions /graphql is priced by."""
    if "session_id" in arguments:  # an id does not change a price; a conversation id is no UUID
        arguments = {**arguments, "session_id": str(UUID(int=0))}
    return _priced(tool, json.dumps(arguments, sort_keys=True))


@lru_cache(maxsize=256)  # an agent asks the same few calls again and again
def _priced(tool: str, given: str) -> Price:
    document, variables = twin(tool, json.loads(given))
    body = json.dumps({"query": document, "variables": variables}).encode()
    schema, operation = _graphql_schema(), _operation(document)
    values = get_variable_values(schema, operation.variable_definitions or (), variables)
    coerced = {} if isinstance(values, list) else values.coerced  # bad values: the tool says
    fragments: dict[str, FragmentDefinitionNode] = {}
    comparisons = 0

    def count(site: Site, _: Path, runs: int, node: FieldNode, field: GraphQLField) -> bool:
        nonlocal comparisons
        if site in BUDGETED:
            comparisons += MAX_SIMILAR_PER_REQUEST if site in WHOLE_BUDGET else runs
        return True

    walk(schema, operation, fragments, coerced, count)
    turns = planned_turns(schema, operation, fragments, coerced)
    return Price(seats_for("/graphql", body, b""), comparisons, turns)


def within_budgets(tool: str, price: Price, replay_turns: int) -> None:
    """LimitExceeded naming the budget's rule when the call could run more than a request may."""
    if price.comparisons > MAX_SIMILAR_PER_REQUEST:
        REFUSED.labels("comparisons").inc()
        why = "could run more comparisons than a request may"
        raise LimitExceeded(tool, why, MAX_SIMILAR_PER_REQUEST, "MAX_SIMILAR_PER_REQUEST")
    if price.turns > replay_turns:
        REFUSED.labels("replay_turns").inc()
        why = f"could read {price.turns} replay turns"
        raise LimitExceeded(tool, why, replay_turns, "SIMILAR_SESSIONS_REPLAY_TURNS")


@dataclass(frozen=True, slots=True)
class Doors:
    """The process's admission state the HTTP edge uses too (app.state's)."""

    rate_limits: RateLimits
    account_rates: RateLimits
    fair_queue: FairQueue
    replay_turns: int


@contextlib.asynccontextmanager
async def admitted(
    doors: Doors, principal: Principal, key_id: str, tool: str, arguments: Mapping[str, Any]
) -> AsyncIterator[None]:
    """Run the block as the call's turn, holding its seats, if it is within the budgets and
    the key's and the account's rates; else LimitExceeded or Refused naming the bound."""
    price = price_call(tool, arguments)
    within_budgets(tool, price, doors.replay_turns)
    account = str(principal.account_id)
    for whose, rates, name in (
        ("key", doors.rate_limits, key_id),
        ("account", doors.account_rates, account),
    ):
        refused = await rates.admit(name)
        if refused is not None:
            REFUSED.labels("rate_limit" if whose == "key" else "account_rate_limit").inc()
            rate, retry = refused
            raise Refused(
                "rate_limited",
                f"more than {describe(rate)} calls ({RATE_SETTINGS[whose]}); retry in {retry} s",
                retry,
            )
    async with contextlib.AsyncExitStack() as stack:
        try:
            await stack.enter_async_context(doors.fair_queue.seated(account, price.seats))
        except QueueFull as full:
            REFUSED.labels("account_queue").inc()
            waiting = f"this account has {full.waiting} requests waiting for their turn"
            raise Refused(
                "account_queue_full",
                f"{waiting} (SIMILAR_SESSIONS_ACCOUNT_QUEUE); retry in {full.retry_after_s} s",
                full.retry_after_s,
            ) from None
        yield
