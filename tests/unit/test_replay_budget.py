"""The replay turns a query may read (the Cost's), planned from the query alone: each replay field's
`first` times the sessions it can run for, through aliases, fragments, variables and
defaults."""

from __future__ import annotations

from typing import Any

from graphql import parse

from resolvers.replay import DEFAULT_REPLAY_PAGE
from schema import schema
from schema.cost import price
from schema.selection_bound import Bounded

GRAPHQL = schema._schema
SESSION = '"00000000-0000-0000-0000-000000000000"'


def planned(query: str, **variables: Any) -> int:
    document = parse(query)
    return price(GRAPHQL, document, Bounded(document), None, variables).replay_turns


def test_each_replay_field_costs_its_first_times_its_sessions() -> None:
    assert planned(f"{{ runtimeSession(id: {SESSION}) {{ replay {{ ordinal }} }} }}") == (
        DEFAULT_REPLAY_PAGE
    )
    page = "replayPage(first: 500) { nodes { ordinal } }"
    issue = " ".join(
        f"a{i}: runtimeSessions(first: 100) {{ nodes {{ {page} }} }}" for i in range(30)
    )
    assert planned(f"{{ {issue} }}") == 30 * 100 * 500
    both = f"""{{ runtimeSession(id: {SESSION}) {{ replay(first: 3) {{ ordinal }}
      again: replayPage(first: 4) {{ hasNextPage }} }}
      runtimeSessions {{ edges {{ node {{ replay(first: 2) {{ ordinal }} }} }} }} }}"""
    assert planned(both) == 3 + 4 + 20 * 2  # runtimeSessions' default page is 20


def test_variables_fragments_and_nesting_are_counted() -> None:
    query = """query($n: Int!, $m: Int!) {
      runtimeSessions(first: $n) { nodes { ...turns } }
      searchSessions(text: "lock timeout", limit: 4) { results { session { ...turns } } }
    }
    fragment turns on RuntimeSession {
      replayPage(first: $m) { nodes { ordinal } }
      similarSessions(limit: 3) { results { session { replay(first: 10) { ordinal } } } }
    }"""
    # runtimeSessions: 5 sessions x (m + 3 neighbours x 10); search: 4 x (m + 3 x 10).
    assert planned(query, n=5, m=7) == 5 * (7 + 30) + 4 * (7 + 30)
    assert planned("{ viewer { name } }") == 0
