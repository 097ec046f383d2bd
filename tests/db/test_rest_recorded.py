"""The REST routes' JSON against answers recorded on the demo corpus, key by key, in order
and value by value: the compatibility routes keep their shape whatever the answer model
behind them becomes.

Recorded with `SIMILAR_SESSIONS_RECORD_REST=1 pytest tests/db/test_rest_recorded.py` (the file
tests/db/recorded/rest_answers.json; that run writes it and fails, so a recording is never a
pass); a change of the REST shape is a change of that file, seen in review. What varies from
run to run is normalised: the time an answer took and a cursor's bytes (signed with the
database's secret) are replaced by a marker, a float is rounded to 9 digits (the last bits of
pgvector's distances may differ from one processor to another), and every time is replaced
once its format is checked. The demo is loaded as of one fixed instant, and the app's
clock reads that instant: its sessions are 7.2 hours apart, so a window counted back from the
wall clock cut them at a place that moved with the hour of the run, and the failure modes'
daily buckets (UTC days) counted them differently from one hour to the next."""

from __future__ import annotations

import json
import os
import re
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx
import pytest
from sqlalchemy.ext.asyncio import AsyncEngine

from indexer import demo
from indexer.commands import load_demo
from indexer.embedders import Registry
from indexer.passes import IndexerConfig

RECORDED = Path(__file__).parent / "recorded" / "rest_answers.json"
RECORD = os.environ.get("SIMILAR_SESSIONS_RECORD_REST") == "1"
AUTH = {"Authorization": f"Bearer {demo.DEMO_API_KEY}"}
LOADED_AT = datetime(2026, 12, 7, 4, 0, tzinfo=UTC)  # an instant the answers were recorded at
# A time as the REST routes write it: ISO 8601 in UTC, microseconds when there are any.
TIME = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d{1,6})?\+00:00$")
LOOKS_LIKE_TIME = re.compile(r"^\d{4}-\d\d-\d\dT")
SIMILAR = "/api/v1/runtime-sessions/{}/similar"
VARYING = {"elapsed_ms", "next_cursor", "as_of"}


@dataclass(frozen=True)
class Earlier:
    """A parameter taken from an earlier request's answer: its `key` (a cursor, the pin)."""

    request: str
    key: str


# (name, path, query parameters): each route with its arguments, a next page, and refusals.
REQUESTS: tuple[tuple[str, str, dict[str, Any]], ...] = (
    ("similar", SIMILAR.format(demo.session_id(0, 0)), {"limit": 3}),
    (
        "similar-next-page",
        SIMILAR.format(demo.session_id(0, 0)),
        {"limit": 3, "cursor": Earlier("similar", "next_cursor")},
    ),
    (
        "similar-filtered",
        SIMILAR.format(demo.session_id(5, 0)),
        {"limit": 2, "status": "failed", "source_type": "tau-bench"},
    ),
    (
        "similar-matches",
        SIMILAR.format(demo.session_id(7, 1)),
        {"limit": 2, "max_matches_per_session": 3},
    ),
    (
        "similar-no-text",
        SIMILAR.format(demo.session_id(12, 2)),
        {"limit": 2, "include_match_text": "false"},
    ),
    ("similar-window", SIMILAR.format(demo.session_id(3, 0)), {"limit": 2, "window_days": 10}),
    ("similar-missing", SIMILAR.format("00000000-0000-4000-8000-000000000000"), {}),
    ("similar-bad-id", SIMILAR.format("nope"), {}),
    ("similar-bad-limit", SIMILAR.format(demo.session_id(0, 0)), {"limit": "many"}),
    ("search", "/api/v1/runtime-sessions/search", {"q": "change my flight to a later date"}),
    (
        "search-page",
        "/api/v1/runtime-sessions/search",
        {"q": "cancel the reservation and refund", "limit": 2, "max_matches_per_session": 1},
    ),
    ("search-empty", "/api/v1/runtime-sessions/search", {"q": ""}),
    (
        "failure-modes",
        "/api/v1/runtime-sessions/failure-modes",
        {"window_days": 61, "limit": 3},
    ),
    (
        "failure-modes-next-page",
        "/api/v1/runtime-sessions/failure-modes",
        {
            "window_days": 61,
            "limit": 3,
            "cursor": Earlier("failure-modes", "next_cursor"),
            "as_of": Earlier("failure-modes", "as_of"),
        },
    ),
    ("failure-modes-bad", "/api/v1/runtime-sessions/failure-modes", {"window_days": "a week"}),
)


# The requests each route refuses (a missing session, a bad argument); every other answers 200.
REFUSED = frozenset(
    {"similar-missing", "similar-bad-id", "similar-bad-limit", "search-empty", "failure-modes-bad"}
)


def normalised(value: Any) -> Any:
    """The answer less what varies between runs of the same request on the same data."""
    if isinstance(value, dict):
        return {k: "<varies>" if k in VARYING else normalised(v) for k, v in value.items()}
    if isinstance(value, list):
        return [normalised(v) for v in value]
    if isinstance(value, float):
        return round(value, 9)
    if isinstance(value, str) and LOOKS_LIKE_TIME.match(value):
        assert TIME.match(value), f"a time not written as the routes write times: {value!r}"
        return "<time>"
    return value


@pytest.fixture
def clock() -> Callable[[], datetime]:
    return lambda: LOADED_AT


async def answers(client: httpx.AsyncClient) -> dict[str, Any]:
    out: dict[str, Any] = {}
    raw: dict[str, Any] = {}
    for name, path, asked in REQUESTS:
        params = {
            k: raw[v.request][v.key] if isinstance(v, Earlier) else v for k, v in asked.items()
        }
        response = await client.get(path, params=params, headers=AUTH)
        raw[name] = response.json()
        out[name] = {"status": response.status_code, "body": normalised(raw[name])}
    return out


async def test_rest_answers_are_the_recorded_ones(
    client: httpx.AsyncClient, engine: AsyncEngine
) -> None:
    await load_demo(engine, IndexerConfig(progress=False), Registry(), now=LOADED_AT)
    got = await answers(client)
    if RECORD:
        RECORDED.parent.mkdir(exist_ok=True)
        RECORDED.write_text(json.dumps(got, indent=1, ensure_ascii=False) + "\n", "utf-8")
        pytest.fail(f"recorded {RECORDED}; run again without SIMILAR_SESSIONS_RECORD_REST")
    recorded = json.loads(RECORDED.read_text("utf-8"))
    assert list(got) == list(recorded)
    for name in recorded:
        assert got[name] == recorded[name], f"the REST answer to {name!r} changed"
        assert json.dumps(got[name]) == json.dumps(recorded[name]), f"{name!r}: keys reordered"
    assert all(got[n]["status"] == 200 for n, _, _ in REQUESTS if n not in REFUSED)
    assert all(got[n]["status"] in (404, 422) for n in REFUSED)
    assert got["similar"]["body"]["results"], "the demo's first session has neighbours"
    assert got["failure-modes"]["body"]["groups"], "the demo's failed sessions group"
