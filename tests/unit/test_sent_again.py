"""The messages a model call sends again are read once: a conversation's next call is read
from where its last ended, and gives the turns a whole reading gives."""

from __future__ import annotations

import json

import pytest

from transfer.formats import genai
from transfer.formats.conversation import Turn
from transfer.formats.genai import GenAISpan, span_turns
from transfer.formats.sent_again import SentAgain


def _messages(n: int, *, edited: int | None = None) -> str:
    messages = [
        {
            "role": "user" if i % 2 == 0 else "assistant",
            "parts": [{"type": "text", "content": f"m{i}"}],
        }
        for i in range(n)
    ]
    if edited is not None:
        messages[edited]["parts"][0]["content"] = "changed"
    return json.dumps(messages)


def _span(text: str, conversation: str | None = "c1") -> GenAISpan:
    return GenAISpan(0, 1, {"gen_ai.input.messages": text}, [], conversation)


class _Reads:
    """genai's reader, counting the characters it was given."""

    def __init__(self) -> None:
        self.chars: list[int] = []

    def __call__(self, text: str) -> list[Turn] | None:
        self.chars.append(len(text))
        return genai._read_messages(text)


@pytest.fixture
def memo(monkeypatch: pytest.MonkeyPatch) -> SentAgain:
    fresh = SentAgain()
    monkeypatch.setattr(genai, "SENT_AGAIN", fresh)
    return fresh


def test_each_call_gives_the_turns_a_whole_reading_gives(memo: SentAgain) -> None:
    for n in range(1, 12):
        text = _messages(n)
        assert span_turns(_span(text)) == span_turns(_span(text, conversation=None))


def test_a_call_that_extends_the_last_is_read_from_where_it_ended() -> None:
    memo, reads = SentAgain(), _Reads()
    first, second = _messages(10), _messages(11)
    memo.turns("c1", first, reads)
    turns = memo.turns("c1", second, reads)
    assert turns == genai._read_messages(second)
    assert reads.chars == [len(first), len(second) - len(first) + 1]


def test_the_same_call_read_again_is_not_parsed_again() -> None:
    """The receiver reads a request when it answers and again when it makes its sessions."""
    memo, reads = SentAgain(), _Reads()
    text = _messages(10)
    first = memo.turns("c1", text, reads)
    assert memo.turns("c1", text, reads) == first == genai._read_messages(text)
    assert reads.chars == [len(text)]


@pytest.mark.parametrize(
    "then",
    [_messages(11, edited=3), _messages(4), _messages(10).replace("]", " ]"), "[1,2]"],
    ids=["an-earlier-message-changed", "shorter", "the-same-but-spaced", "not-messages"],
)
def test_a_call_that_does_not_extend_the_last_is_read_whole(then: str) -> None:
    memo, reads = SentAgain(), _Reads()
    memo.turns("c1", _messages(10), reads)
    assert memo.turns("c1", then, reads) == genai._read_messages(then)
    assert reads.chars[-1] == len(then)


def test_another_conversation_under_the_same_key_gets_its_own_turns() -> None:
    memo = SentAgain()
    mine = _messages(6)
    theirs = json.dumps([{"role": "user", "parts": [{"type": "text", "content": "other"}]}] * 7)
    memo.turns("shared", mine, genai._read_messages)
    assert memo.turns("shared", theirs, genai._read_messages) == genai._read_messages(theirs)


def test_what_it_keeps_is_bounded_by_the_characters_read() -> None:
    memo, reads = SentAgain(max_chars=3 * len(_messages(10))), _Reads()
    for conversation in ("a", "b", "c", "d"):
        memo.turns(conversation, _messages(10), reads)
    memo.turns("a", _messages(11), reads)  # the least recent, dropped: read whole
    memo.turns("d", _messages(11), reads)  # kept: read from where it ended
    assert reads.chars[-2:] == [len(_messages(11)), len(_messages(11)) - len(_messages(10)) + 1]


def test_json_nested_too_deep_in_the_new_messages_is_refused_as_whole() -> None:
    memo = SentAgain()
    memo.turns("c1", _messages(2), genai._read_messages)
    deep = _messages(2)[:-1] + ", " + "[" * 70 + "]" * 70 + "]"
    with pytest.raises(ValueError, match="nested deeper"):
        memo.turns("c1", deep, genai._read_messages)
