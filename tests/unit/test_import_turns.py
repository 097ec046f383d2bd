"""A turn too large to index is refused at import, naming the turn and the bound: one of
60 MiB had been taken, and every indexing pass then failed on it, for every account."""

from __future__ import annotations

import json
import tracemalloc
import uuid

import pytest

from transfer.formats import messages
from transfer.formats.messages import parse
from transfer.values import MAX_TURN_CHARS

ACCOUNT = uuid.uuid4()


def line(*contents: str) -> bytes:
    messages = [{"role": "user", "content": content} for content in contents]
    return json.dumps({"account_id": str(ACCOUNT), "messages": messages}).encode()


def test_a_message_past_the_bound_refuses_its_line_naming_the_turn() -> None:
    with pytest.raises(ValueError, match=r"^turn 1: content: 1,000,001 characters; .*MAX_TURN"):
        list(parse(line("the deploy failed", "x" * (MAX_TURN_CHARS + 1)), None))


def test_a_message_at_the_bound_is_taken() -> None:
    records = list(parse(line("x" * MAX_TURN_CHARS), None))
    assert [r.type for r in records] == ["activity", "session"]


def test_a_long_messages_line_is_read_in_the_memory_of_a_few_messages() -> None:
    # A line of a million messages (42 MB) peaked at 2.3 GB read whole: 55 times its size.
    count = 20_000
    raw = line(*(f"message {n}" for n in range(count)))
    tracemalloc.start()
    try:
        records = 0
        for _ in parse(raw, None):
            records += 1
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert records == count + 1
    assert peak < 3 * len(raw), (peak, len(raw))  # the line's text, and a message at a time


def test_a_line_read_a_message_at_a_time_makes_what_it_made_read_whole() -> None:
    said = [{"role": "user", "content": "deploy", "timestamp": "2026-01-31T09:30:00Z"}]
    said += [{"role": "assistant", "content": [{"type": "text", "text": "on it"}]}, {"role": "x"}]
    data = {"account_id": str(ACCOUNT), "title": None, "messages": said}
    streamed = list(parse(json.dumps(data).encode(), None))
    whole = list(messages._whole(json.dumps(data).encode(), None))
    assert [r.model_dump() for r in streamed] == [r.model_dump() for r in whole]
    assert [r.type for r in streamed] == ["activity", "activity", "session"]
    with pytest.raises(ValueError, match=r"^messages\.3\.role: Field required"):
        list(parse(json.dumps({**data, "messages": [*said, {}]}).encode(), None))
