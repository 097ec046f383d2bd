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
    # fields and names, once in each pass
    assert bounded.refusal is None and bounded.steps == 4 * MAX_SAME_NAME


def test_a_selection_set_of_too_many_spreads_is_refused_wherever_it_is() -> None:
    spreads = " ".join(["...F"] * (MAX_SELECTIONS + 1))
    document = parse(f"{{ viewer {{ {spreads} }} }} fragment F on Viewer {{ name }}")
    bounded = Bounded(document)
    assert bounded.refusal is not None and "MAX_SELECTIONS" in bounded.refusal
    nested = parse("{ ... on Query { viewer { " + " ".join(["name"] * 11) + " } } }")
    assert "`name`" in (Bounded(nested).refusal or "")


def chain(levels: int) -> str:
    """`query { ...F<levels> }`, each fragment spreading the one below it ten times."""
    text = f"query {{ ...F{levels} }} fragment F1 on Query {{ viewer {{ name }} }}"
    for level in range(2, levels + 1):
        text += f" fragment F{level} on Query {{ {' '.join([f'...F{level - 1}'] * 10)} }}"
    return text


def test_the_fragment_chain_is_refused_naming_the_first_fragment_past_the_bound() -> None:
    document = parse(chain(8))  # 651 characters, ten million fields once spread
    bounded = Bounded(document)
    assert bounded.refusal is not None
    assert bounded.refusal.startswith("fragment `F4`: expands to 3110 selections")
    assert "MAX_EXPANDED_SELECTIONS" in bounded.refusal
    # Each selection of the text is read once in each pass: 73 of them (the operation's spread,
    # `viewer`, `name` and seven fragments of ten spreads).
    assert bounded.steps <= 2 * 73


def test_fragments_within_the_bound_pass_and_a_fragment_cycle_ends() -> None:
    assert Bounded(parse(chain(3))).refusal is None  # 310 selections
    cycle = parse(
        "{ ...A } fragment A on Query { ...B } fragment B on Query { ...A viewer { name } }"
    )
    assert Bounded(cycle).refusal is None  # validation refuses the cycle itself
    wide = "{ " + " ".join(f"a{n}: viewer {{ ...N }}" for n in range(10)) + " }"
    fragment = " fragment N on Viewer { " + " ".join(f"n{n}: name" for n in range(MAX_SAME_NAME))
    operation = parse(wide + fragment + " }")  # 10 + 10 x 11 selections: within
    assert Bounded(operation).refusal is None


def test_an_operation_past_the_bound_through_fragments_within_it_is_refused() -> None:
    inner = (
        "fragment V on Query { " + " ".join(f"v{n}: viewer {{ name }}" for n in range(30)) + " }"
    )
    outer = "fragment W on Query { " + " ".join(["...V"] * 10) + " }"  # 10 + 10 x 60 = 610
    document = parse("query Both { ...W ...W } " + inner + " " + outer)
    bounded = Bounded(document)
    assert bounded.refusal is not None
    assert bounded.refusal.startswith("operation 'Both': expands to 1222 selections")
