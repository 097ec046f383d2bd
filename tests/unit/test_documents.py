"""The kept parses and validations: a text sent again is parsed and validated once; what is
kept is bounded by the texts' total length, however many distinct texts come; a text longer
than the bound is parsed every time and never kept."""

from __future__ import annotations

import asyncio

import pytest
from graphql import GraphQLError, GraphQLSyntaxError

from schema import schema
from schema.documents import MAX_QUERY_TOKENS, Documents, TooLong

QUERY = "{ viewer { name } }"


class Counted:
    """A validation that finds nothing, counting its runs."""

    def __init__(self) -> None:
        self.runs = 0

    def __call__(self) -> list[GraphQLError]:
        self.runs += 1
        return []


def test_a_text_sent_again_is_parsed_and_validated_once() -> None:
    documents = Documents(chars=1000)
    validate = Counted()
    first = documents.parsed(QUERY, {})
    assert documents.parsed(QUERY, {}) is first
    assert documents.validated(QUERY, first, validate) == []
    assert documents.validated(QUERY, first, validate) == []
    assert validate.runs == 1


def test_what_is_kept_is_bounded_by_the_texts_length() -> None:
    documents = Documents(chars=1000)
    for spaces in range(200):  # the same query with a run of spaces each time: 200 texts
        documents.parsed("{ viewer { name }" + " " * spaces + "}", {})
        assert documents.kept_chars <= 1000
    assert 0 < len(documents) < 200
    # the most recent texts stay
    assert documents.parsed("{ viewer { name }" + " " * 199 + "}", {}) is documents.parsed(
        "{ viewer { name }" + " " * 199 + "}", {}
    )


def test_a_text_longer_than_the_bound_is_never_kept() -> None:
    documents = Documents(chars=10)
    validate = Counted()
    first = documents.parsed(QUERY, {})
    assert documents.parsed(QUERY, {}) is not first
    assert len(documents) == 0
    documents.validated(QUERY, first, validate)
    documents.validated(QUERY, first, validate)
    assert validate.runs == 2


def test_two_operations_without_an_operation_name_are_an_error_naming_it() -> None:
    two = "query A { __typename } query B { __typename }"
    refused = asyncio.run(schema.execute(two))
    assert refused.data is None and refused.errors is not None
    [error] = refused.errors
    assert error.extensions == {"code": "BAD_USER_INPUT", "argument": "operationName"}
    assert error.message.startswith("operationName: the query holds 2 operations (A, B)")
    chosen = asyncio.run(schema.execute(two, operation_name="B"))
    assert chosen.errors is None and chosen.data == {"__typename": "Query"}
    named_first = asyncio.run(schema.execute(two, operation_name="A"))
    assert named_first.errors is None
    one = asyncio.run(schema.execute("query A { __typename }"))
    assert one.errors is None


def test_the_token_bound_is_told_from_a_syntax_error_by_where_the_parse_stopped() -> None:
    """Past MAX_QUERY_TOKENS the parse stops (TooLong, our refusal); a syntax error within the
    bound stays the parser's own error, however long the text."""
    documents = Documents()

    def query(names: int, end: str = "} }") -> str:  # `{ viewer {`, the names, then `end`
        return "{ viewer { " + "name " * names + end

    assert documents.parsed(query(MAX_QUERY_TOKENS - 5), {}).definitions  # the bound exactly
    with pytest.raises(TooLong) as too:
        documents.parsed(query(MAX_QUERY_TOKENS - 4), {})  # one token more
    assert too.value.refusal.bound == "tokens" and "MAX_QUERY_TOKENS" in too.value.refusal.message
    with pytest.raises(GraphQLSyntaxError):  # the token after the bound's last does not lex
        documents.parsed(query(MAX_QUERY_TOKENS - 3, "? }"), {})
    with pytest.raises(GraphQLSyntaxError):  # an early error in a text past the bound
        documents.parsed("{ viewer { ) " + "name " * 2 * MAX_QUERY_TOKENS + "} }", {})
    with pytest.raises(TooLong):  # a late one, past the bound: the parse stopped first
        documents.parsed(query(2 * MAX_QUERY_TOKENS, "? }"), {})
