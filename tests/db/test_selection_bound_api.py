"""The selection bound as a client meets it: refused with LIMIT_EXCEEDED naming the field and
the constant, before graphql-core validates anything, each text with other spaces alike; a
query within the bound answers as before."""

from __future__ import annotations

from typing import Any

import httpx
import pytest
from sqlalchemy.ext.asyncio import AsyncEngine
from strawberry.schema import schema as strawberry_schema

from schema.selection_bound import MAX_SAME_NAME
from tests.support.comparisons import graphql
from tests.support.world import pair_world


async def test_repeated_fields_are_refused_before_validation(
    client: httpx.AsyncClient, engine: AsyncEngine, monkeypatch: pytest.MonkeyPatch
) -> None:
    _, key = await pair_world(engine)
    validated = 0
    validate = strawberry_schema.validate_document

    def counted(*args: Any) -> Any:
        nonlocal validated
        validated += 1
        return validate(*args)

    monkeypatch.setattr(strawberry_schema, "validate_document", counted)
    for spaces in (" ", "  ", "\n"):  # no cache helps: the text differs each time
        query = "{" + spaces.join(["viewer { name }"] * 240) + "}"
        body = await graphql(client, key, query)
        [error] = body["errors"]
        assert error["extensions"]["code"] == "LIMIT_EXCEEDED"
        assert "`viewer`" in error["message"] and "MAX_SAME_NAME" in error["message"]
        assert body.get("data") is None
    assert validated == 0
    within = await graphql(client, key, "{" + " ".join(["viewer { name }"] * MAX_SAME_NAME) + "}")
    assert within["data"]["viewer"]["name"] and validated == 1


async def test_every_limit_refusal_names_what_it_refused_and_its_constant(
    client: httpx.AsyncClient, engine: AsyncEngine
) -> None:
    _, key = await pair_world(engine)
    deep = "{ runtimeSessions { nodes { " + "similarSessions { results { session { " * 4
    deep += "id" + " } } }" * 4 + " } } }"
    for query, named in (
        ("{" + " ".join(f"a{n}: viewer {{ name }}" for n in range(300)) + "}", "MAX_QUERY_TOKENS"),
        ("{" + " ".join(f"a{n}: viewer {{ name }}" for n in range(40)) + "}", "MAX_ALIASES"),
        ("query Deep " + deep, "MAX_QUERY_DEPTH"),
        ("{" + " ".join(["viewer { name }"] * 750) + "}", "MAX_QUERY_TOKENS"),
        (
            "{ a: failureModes(windowDays: 7) { bound } b: failureModes(windowDays: 1) { bound } }",
            "MAX_SIMILAR_PER_REQUEST",
        ),
    ):
        body = await graphql(client, key, query)
        error = body["errors"][0]
        assert error["extensions"]["code"] == "LIMIT_EXCEEDED", error
        assert named in error["message"] and "at most" in error["message"], error
    depth = await graphql(client, key, "query Deep " + deep)
    assert "operation 'Deep'" in depth["errors"][0]["message"]
    budget = await graphql(
        client,
        key,
        "{ a: failureModes(windowDays: 7) { bound } b: failureModes(windowDays: 1) { bound } }",
    )
    assert budget["errors"][0]["message"].startswith("b: refused")


async def test_the_fragment_chain_is_refused_before_validation_whatever_its_spaces(
    client: httpx.AsyncClient, engine: AsyncEngine, monkeypatch: pytest.MonkeyPatch
) -> None:
    _, key = await pair_world(engine)
    validated = 0
    validate = strawberry_schema.validate_document

    def counted(*args: Any) -> Any:
        nonlocal validated
        validated += 1
        return validate(*args)

    monkeypatch.setattr(strawberry_schema, "validate_document", counted)
    for spaces in (" ", "  ", "\n"):  # 651 characters at one space: no cache helps
        query = f"query {{ ...F8 }}{spaces}fragment F1 on Query {{ viewer {{ name }} }}"
        for level in range(2, 9):
            query += f"{spaces}fragment F{level} on Query {{ "
            query += spaces.join([f"...F{level - 1}"] * 10) + " }"
        body = await graphql(client, key, query)
        [error] = body["errors"]
        assert error["extensions"]["code"] == "LIMIT_EXCEEDED"
        assert error["message"].startswith("fragment `F4`: expands to 3110 selections")
        assert "MAX_EXPANDED_SELECTIONS" in error["message"] and body.get("data") is None
    assert validated == 0
