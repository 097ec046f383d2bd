"""DegradedReason is derived from the reason codes: a code added to SENTENCES joins it."""

from __future__ import annotations

import importlib

import pytest

import schema.reasons
from resolvers.rules import degraded


def test_the_enum_holds_every_code_in_order_with_the_code_as_its_value() -> None:
    assert [m.value for m in schema.reasons.ReasonCode] == list(degraded.SENTENCES)
    assert all(m.name == m.value.upper() for m in schema.reasons.ReasonCode)


def test_a_code_added_to_the_sentences_joins_the_enum(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(degraded.SENTENCES, "similar_new_reason", "A new reason.")
    try:
        added = importlib.reload(schema.reasons)
        assert added.ReasonCode("similar_new_reason").name == "SIMILAR_NEW_REASON"
    finally:
        monkeypatch.undo()
        importlib.reload(schema.reasons)
