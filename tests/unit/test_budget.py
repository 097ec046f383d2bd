"""The comparison budget's plan (the Cost's granted fields), read from the query alone:
fragments, variables, defaults, nesting; and every list that can lead to a session is bounded
by an argument."""

from __future__ import annotations

from typing import Any

from graphql import GraphQLList, GraphQLNonNull, GraphQLObjectType, get_named_type, parse
from strawberry.types.base import StrawberryObjectDefinition
from strawberry.utils.str_converters import to_camel_case

from schema import schema
from schema.cost import BOUNDED_LISTS, BUDGETED, Granted, price
from schema.selection_bound import Bounded

GRAPHQL = schema._schema


def plan(query: str, limit: int = 50, **variables: Any) -> set[tuple[str, ...]]:
    document = parse(query)
    return set(price(GRAPHQL, document, Bounded(document), None, variables, limit).granted)


def test_fields_are_granted_in_query_order_while_the_budget_lasts() -> None:
    query = """query($n: Int!) {
      a: runtimeSessions(first: $n) { nodes { ...similar } }
      b: runtimeSession(id: "00000000-0000-0000-0000-000000000000") { ...similar }
      c: runtimeSessions { edges { node { similarSessions { limit } } } }
      d: runtimeSession(id: "00000000-0000-0000-0000-000000000000") { ...similar }
    }
    fragment similar on RuntimeSession { similarSessions { limit } }"""
    # 30 + 1 fit; c's default page of 20 would make 51; d still fits.
    assert plan(query, n=30) == {
        ("a", "nodes", "similarSessions"),
        ("b", "similarSessions"),
        ("d", "similarSessions"),
    }
    assert plan(query, n=28) == {  # 28 + 1 + 20 + 1
        ("a", "nodes", "similarSessions"),
        ("b", "similarSessions"),
        ("c", "edges", "node", "similarSessions"),
        ("d", "similarSessions"),
    }


def test_a_comparison_under_another_costs_once_per_result_and_only_if_its_parent_runs() -> None:
    query = """{ runtimeSession(id: "00000000-0000-0000-0000-000000000000") {
      similarSessions(limit: 10) { results { session { similarSessions { limit } } } } } }"""
    outer = ("runtimeSession", "similarSessions")
    inner = (*outer, "results", "session", "similarSessions")
    assert plan(query) == {outer, inner}  # 1 + 10
    assert plan(query, limit=10) == {outer}  # 1 + 10 > 10: the inner one is refused
    assert plan(query, limit=0) == set()


def test_a_timeline_costs_once_per_comparison_and_a_search_once() -> None:
    query = """{ runtimeSessions(first: 20) { nodes { similarSessions(limit: 3) {
      timeline { sessions } results { title } } } } }"""
    similar = ("runtimeSessions", "nodes", "similarSessions")
    assert plan(query) == {similar, (*similar, "timeline")}  # 20 + 20, not 20 x 3
    assert plan(query, limit=39) == {similar}
    search = """{ searchSessions(text: "lock timeout", limit: 5) {
      results { session { similarSessions { limit } } } } }"""
    under = ("searchSessions", "results", "session", "similarSessions")
    assert plan(search) == {("searchSessions",), under}  # 1 + 5
    assert plan(search, limit=5) == {("searchSessions",)}


def _reaches(type_: GraphQLObjectType, target: str, seen: set[str]) -> bool:
    if type_.name == target:
        return True
    seen.add(type_.name)
    for field in type_.fields.values():
        named = get_named_type(field.type)
        if (
            isinstance(named, GraphQLObjectType)
            and named.name not in seen
            and _reaches(named, target, seen)
        ):
            return True
    return False


def _is_list(type_: Any) -> bool:
    return isinstance(type_.of_type if isinstance(type_, GraphQLNonNull) else type_, GraphQLList)


def test_every_list_that_leads_to_a_session_is_bounded_by_the_plan() -> None:
    lists = {
        (type_.name, name)
        for type_ in GRAPHQL.type_map.values()
        if isinstance(type_, GraphQLObjectType) and not type_.name.startswith("__")
        for name, field in type_.fields.items()
        if _is_list(field.type)
        and isinstance(get_named_type(field.type), GraphQLObjectType)
        and _reaches(get_named_type(field.type), "RuntimeSession", set())  # type: ignore[arg-type]
    }
    assert lists <= BOUNDED_LISTS
    assert {("RuntimeSessionConnection", "nodes"), ("RuntimeSessionConnection", "edges")} <= lists


def test_failure_modes_take_the_whole_budget_and_bound_their_lists() -> None:
    query = """{ a: failureModes(windowDays: 7) { groups { representative {
      similarSessions { limit } } } }
      b: failureModes(windowDays: 1) { groupCount }
      c: runtimeSession(id: "00000000-0000-0000-0000-000000000000") {
        similarSessions { limit } } }"""
    assert plan(query) == {("a",)}  # nothing else that compares runs beside it
    later = """{ c: runtimeSession(id: "00000000-0000-0000-0000-000000000000") {
      similarSessions { limit } } a: failureModes(windowDays: 7) { groupCount } }"""
    assert plan(later) == {("c", "similarSessions")}  # 1 spent: the whole budget no longer fits


def test_a_field_skip_or_include_leaves_out_costs_nothing() -> None:
    query = """query($off: Boolean!, $on: Boolean!) {
      a: failureModes(windowDays: 7) @include(if: $off) { bound }
      b: failureModes(windowDays: 7) @skip(if: true) { bound }
      c: runtimeSessions(first: 40) @include(if: $on) { nodes { ...similar } }
      d: runtimeSession(id: "00000000-0000-0000-0000-000000000000") { ...similar @skip(if: $on) }
      e: runtimeSession(id: "00000000-0000-0000-0000-000000000000") { ...similar }
    }
    fragment similar on RuntimeSession { similarSessions { limit } }"""
    # a and b would take the whole budget, d one comparison: none of them runs.
    assert plan(query, off=False, on=True) == {
        ("c", "nodes", "similarSessions"),
        ("e", "similarSessions"),
    }
    assert plan(query, off=True, on=False) == {("a",)}  # a runs: it takes the whole budget


def test_every_priced_comparing_field_runs_only_when_granted() -> None:
    """The fields the Cost prices (BUDGETED) are the fields that check their grant (Granted):
    a comparing field the price missed could not run unpriced, nor one priced go unchecked."""
    checked = {
        (definition.name, field.graphql_name or to_camel_case(field.python_name))
        for definition in (
            schema.get_type_by_name(name) for name in GRAPHQL.type_map if not name.startswith("__")
        )
        if isinstance(definition, StrawberryObjectDefinition)
        for field in definition.fields
        if any(isinstance(e, Granted) for e in field.extensions)
    }
    assert checked == BUDGETED
