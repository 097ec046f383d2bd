"""The reason codes are one enum (values/reasons.py): the schema's DegradedReason is it, every
member has its sentence in the contract's order, and no module of the product writes a code
as a bare string."""

from __future__ import annotations

import ast
from pathlib import Path

import schema.reasons
from resolvers.rules import degraded
from values.reasons import Reason

ROOT = Path(__file__).resolve().parents[2]
PRODUCT = ("data", "indexer", "resolvers", "schema", "similar_sessions", "transfer", "values")


def test_the_enum_holds_every_code_in_order_with_the_code_as_its_value() -> None:
    assert [m.value for m in schema.reasons.DegradedReason] == list(degraded.SENTENCES)
    assert all(m.name == m.value.upper() for m in schema.reasons.DegradedReason)
    assert schema.reasons.DegradedReason is Reason


def test_every_code_has_its_sentence_and_its_place() -> None:
    assert list(degraded.SENTENCES) == list(Reason)
    assert [degraded.REASON_ORDER[r] for r in Reason] == list(range(len(Reason)))
    assert set(degraded.WINDOWED) <= set(Reason) and set(degraded.COUNTED) <= set(Reason)


def test_a_code_that_is_not_a_reason_is_refused() -> None:
    try:
        degraded.degraded(False, {"similar_new_reason"})
    except ValueError as exc:
        assert "similar_new_reason" in str(exc)
    else:
        raise AssertionError("an unknown code was accepted")


def test_the_block_holds_members_in_the_contract_s_order_whatever_it_was_given() -> None:
    block = degraded.degraded(True, {"similar_filter_applied", Reason.SIMILAR_WINDOW_APPLIED})
    assert block.reasons == (Reason.SIMILAR_WINDOW_APPLIED, Reason.SIMILAR_FILTER_APPLIED)
    assert all(type(r) is Reason for r in block.reasons)


def bare_codes(path: Path) -> list[tuple[int, str]]:
    """The string constants of a module that are a reason's code (a docstring is none)."""
    codes = {r.value for r in Reason}
    tree = ast.parse(path.read_text(encoding="utf-8"))
    return [
        (node.lineno, node.value)
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value in codes
    ]


def test_no_product_module_writes_a_code_as_a_bare_string() -> None:
    found = {
        str(path.relative_to(ROOT)): bare
        for package in PRODUCT
        for path in (ROOT / package).rglob("*.py")
        if path.name != "reasons.py" and (bare := bare_codes(path))
    }
    assert found == {}
