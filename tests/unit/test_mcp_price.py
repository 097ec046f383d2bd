"""A tool call costs what its GraphQL twin costs: priced as the HTTP edge prices the twin's
POST /graphql (similar_sessions/admission.cost_of): its seats, comparisons and replay turns."""

from __future__ import annotations

import json
from uuid import UUID

import pytest
from starlette.datastructures import State

from resolvers.budgets import MAX_SIMILAR_PER_REQUEST, Cost
from resolvers.errors import LimitExceeded
from schema.cost import MANY, ONE, WHOLE_PASS
from schema.documents import Documents
from schema.query import make_schema
from similar_sessions.admission import cost_of
from similar_sessions.mcp_admission import price_call, within_budgets
from similar_sessions.mcp_tools import twin

CALLS = [
    ("find_similar_sessions", {"session_id": "a-conversation", "limit": 20}, ONE, 1, 0),
    ("search_sessions", {"description": "timeout", "limit": 20}, MANY, 1, 0),
    ("failure_modes", {"window_days": 30}, WHOLE_PASS, MAX_SIMILAR_PER_REQUEST, 0),
    ("get_session", {"session_id": "x", "turns": 321}, ONE, 0, 321),
    ("get_session", {"session_id": "x"}, ONE, 0, 100),
]


@pytest.mark.parametrize(("tool", "arguments", "seats", "comparisons", "turns"), CALLS)
def test_a_call_is_priced_as_its_graphql_twin(
    tool: str, arguments: dict[str, object], seats: int, comparisons: int, turns: int
) -> None:
    price = price_call(tool, arguments)
    assert (price.seats, price.comparisons, price.replay_turns) == (seats, comparisons, turns)
    if "session_id" in arguments:  # an id does not change a price (price_call's twin has none)
        arguments = {**arguments, "session_id": str(UUID(int=0))}
    document, variables = twin(tool, arguments)
    body = json.dumps({"query": document, "variables": variables}).encode()
    state = State({"documents": Documents(), "schema": make_schema()})
    assert cost_of(state, {"path": "/graphql", "method": "POST"}, body) == price


def test_a_call_past_a_budget_is_refused_naming_its_rule() -> None:
    within_budgets("get_session", Cost(ONE, replay_turns=500), replay_turns=500)
    with pytest.raises(LimitExceeded, match="SIMILAR_SESSIONS_REPLAY_TURNS"):
        within_budgets("get_session", Cost(ONE, replay_turns=501), replay_turns=500)
    with pytest.raises(LimitExceeded, match="MAX_SIMILAR_PER_REQUEST"):
        within_budgets(
            "failure_modes", Cost(WHOLE_PASS, comparisons=MAX_SIMILAR_PER_REQUEST + 1), 500
        )
