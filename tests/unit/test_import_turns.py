"""A turn too large to index is refused at import, naming the turn and the bound: one of
60 MiB had been taken, and every indexing pass then failed on it, for every account."""

from __future__ import annotations

import json
import uuid

import pytest

from transfer.formats.messages import parse
from transfer.values import MAX_TURN_CHARS

ACCOUNT = uuid.uuid4()


def line(*contents: str) -> bytes:
    messages = [{"role": "user", "content": content} for content in contents]
    return json.dumps({"account_id": str(ACCOUNT), "messages": messages}).encode()


def test_a_message_past_the_bound_refuses_its_line_naming_the_turn() -> None:
    with pytest.raises(ValueError, match=r"^turn 1: content: 1,000,001 characters; .*MAX_TURN"):
        parse(line("the deploy failed", "x" * (MAX_TURN_CHARS + 1)), None)


def test_a_message_at_the_bound_is_taken() -> None:
    records = parse(line("x" * MAX_TURN_CHARS), None)
    assert [r.type for r in records] == ["session", "activity"]
