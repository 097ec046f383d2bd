"""A request's Cost as admission prices it, once, from what it asks (issue 56): its seats by
the most costly thing it asks, read from the parsed query (its JSON escapes and a GET's query
string decoded by their readers, not by patterns over the bytes), REST routes by their path."""

from __future__ import annotations

import json
from pathlib import Path

from starlette.datastructures import State

from schema import schema
from schema.documents import Documents
from similar_sessions.admission import cost_of

STATE = State({"documents": Documents(), "schema": schema})


def seats_for(path: str, body: bytes, query: bytes, method: str = "POST") -> int:
    scope = {"type": "http", "path": path, "method": method, "query_string": query}
    return cost_of(STATE, scope, body).seats


def asked(query: str) -> bytes:
    """A GraphQL request's JSON body asking `query`."""
    return json.dumps({"query": query}).encode()


def test_a_request_costs_the_seats_of_the_most_costly_thing_it_asks() -> None:
    graphql = "/graphql"
    assert seats_for(graphql, b'{"query": "{ viewer { name } }"}', b"") == 1
    assert seats_for(graphql, b'{"query": "{ runtimeSession(id: $i) { title } }"}', b"") == 1
    one = asked("{ runtimeSession(id: $i) { similarSessions { results { score } } } }")
    assert seats_for(graphql, one, b"") == 1
    two = asked("{ a: similarSessions { x } b: similarSessions { x } }")
    assert seats_for(graphql, two, b"") == 2
    assert seats_for(graphql, asked("{ runtimeSessions(first: 50) { nodes { id } } }"), b"") == 2
    search = asked('{ searchSessions(text: "x") { results { score } } }')
    assert seats_for(graphql, search, b"") == 2
    assert seats_for(graphql, asked("{ failureModes { groupCount } searchSessions }"), b"") == 3
    assert seats_for("/api/v1/runtime-sessions/failure-modes", b"", b"") == 3
    assert seats_for("/api/v1/runtime-sessions/search", b"", b"q=refund") == 2
    assert seats_for(graphql, b"", b"query=%7B+failure%4Dodes+%7D", "GET") == 3  # read decoded
    assert seats_for(graphql, b'{"query": "{ \\u0066ailureModes }"}', b"") == 3


def test_what_a_query_only_spells_costs_nothing() -> None:
    """Read from the parsed operation: a search text, a fragment never spread or a field
    `@skip` leaves out is not asked."""
    search = asked('{ searchSessions(text: "failureModes") { results { score } } }')
    assert seats_for("/graphql", search, b"") == 2
    unused = asked("{ viewer { name } } fragment F on Query { failureModes { bound } }")
    assert seats_for("/graphql", unused, b"") == 1
    skipped = asked("{ viewer { name } failureModes @skip(if: true) { bound } }")
    assert seats_for("/graphql", skipped, b"") == 1


def test_no_module_reads_a_librarys_error_message() -> None:
    """The query limits are our own: no product module matches graphql-core's or strawberry's
    words for their refusals."""
    root = Path(__file__).resolve().parents[2]
    words = ("aliases found", "maximum operation depth", "Document contains more than")
    for folder in ("schema", "resolvers", "similar_sessions", "data", "config"):
        for module in (root / folder).rglob("*.py"):
            text = module.read_text()
            assert not [w for w in words if w in text], module
