"""A tool call costs what its GraphQL twin costs: its seats by the function /graphql is priced
by, its comparisons and replay turns by the budgets' own walks."""

from __future__ import annotations

import json

import pytest

from resolvers.budgets import MAX_SIMILAR_PER_REQUEST
from resolvers.errors import LimitExceeded
from similar_sessions.fair_queue import MANY, ONE, WHOLE_PASS, seats_for
from similar_sessions.mcp_admission import Price, price_call, within_budgets
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
    document, variables = twin(tool, arguments)
    body = json.dumps({"query": document, "variables": variables}).encode()
    assert price_call(tool, arguments) == Price(seats, comparisons, turns)
    assert seats_for("/graphql", body, b"") == seats


def test_a_call_past_a_budget_is_refused_naming_its_rule() -> None:
    within_budgets("get_session", Price(ONE, 0, 500), replay_turns=500)
    with pytest.raises(LimitExceeded, match="SIMILAR_SESSIONS_REPLAY_TURNS"):
        within_budgets("get_session", Price(ONE, 0, 501), replay_turns=500)
    with pytest.raises(LimitExceeded, match="MAX_SIMILAR_PER_REQUEST"):
        within_budgets("failure_modes", Price(WHOLE_PASS, MAX_SIMILAR_PER_REQUEST + 1, 0), 500)
