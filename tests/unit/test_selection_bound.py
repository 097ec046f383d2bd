"""The bound checked before validation: one step per selection, the first selection set past
a bound named with the field and the constant, and what stays within it untouched."""

from __future__ import annotations

from graphql import parse

from schema.selection_bound import MAX_SAME_NAME, MAX_SELECTIONS, Bounded

COPIES = "{ " + " ".join(["viewer { name }"] * 240) + " }"  # 962 tokens


def test_the_240_copies_are_refused_in_as_many_steps_as_the_bound() -> None:
    bounded = Bounded(parse(COPIES))
    assert bounded.refusal is not None and "`viewer`" in bounded.refusal
    assert "MAX_SAME_NAME" in bounded.refusal and f"at most {MAX_SAME_NAME}" in bounded.refusal
    assert bounded.steps == MAX_SAME_NAME + 1  # it stops at the first field past the bound


def test_fields_under_aliases_and_within_the_bounds_pass() -> None:
    aliased = "{ " + " ".join(f"v{n}: viewer {{ name }}" for n in range(25)) + " }"
    assert Bounded(parse(aliased)).refusal is None
    within = "{ " + " ".join(["viewer { name }"] * MAX_SAME_NAME) + " }"
    bounded = Bounded(parse(within))
    assert bounded.refusal is None and bounded.steps == 2 * MAX_SAME_NAME  # fields and names


def test_a_selection_set_of_too_many_spreads_is_refused_wherever_it_is() -> None:
    spreads = " ".join(["...F"] * (MAX_SELECTIONS + 1))
    document = parse(f"{{ viewer {{ {spreads} }} }} fragment F on Viewer {{ name }}")
    bounded = Bounded(document)
    assert bounded.refusal is not None and "MAX_SELECTIONS" in bounded.refusal
    nested = parse("{ ... on Query { viewer { " + " ".join(["name"] * 11) + " } } }")
    assert "`name`" in (Bounded(nested).refusal or "")
