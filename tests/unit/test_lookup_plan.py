"""The lookup plan over its inputs (pure, no database): every caller, a fitted ef_search or
none, an account routed exact or not, every path by size; and each caller of the product
takes its plan from the rule."""

from __future__ import annotations

import ast
import dataclasses
import inspect
from pathlib import Path

import pytest

from resolvers.rules import lookup_path, ranking
from resolvers.rules.lookup_plan import (
    APPLIES,
    Account,
    Caller,
    plan,
)
from resolvers.tuning import Tuning
from values.lookups import LookupPath

ROOT = Path(__file__).resolve().parents[2]
TUNING = Tuning(
    exact_scan_max_chunks=1000,
    ef_search=100,
    ef_search_retry=400,
    overfetch=120,
    comparison_timeout_ms=2000,
    verify_timeout_ms=800,
    failure_modes_timeout_ms=30_000,
)


def test_a_comparison_on_an_account_known_for_nothing_takes_the_settings() -> None:
    planned = plan(Caller.COMPARISON, TUNING)
    assert not planned.exact and not planned.routed
    assert planned.exact_scan_max_chunks == 1000
    assert planned.ef_search == 100
    assert planned.widen_ef_search == 400
    assert planned.overfetch == 120
    assert planned.check_budget_ms == 800
    assert planned.settings.timeout_ms == 2000 and planned.settings.ef_search == 100


@pytest.mark.parametrize(
    ("fitted", "expected"),
    [(40, 40), (100, 100), (300, 100), (None, 100)],
)
def test_a_fitted_ef_search_narrows_a_comparison_never_widens_it(
    fitted: int | None, expected: int
) -> None:
    planned = plan(Caller.COMPARISON, TUNING, Account(fitted_ef_search=fitted))
    assert planned.ef_search == expected
    assert planned.widen_ef_search == 400  # the retry stays beside a narrower scan
    assert planned.check_budget_ms == 800  # and so does the check


def test_a_fit_is_ignored_when_fitting_is_off() -> None:
    tuning = dataclasses.replace(TUNING, ef_search_fitted=False)
    assert plan(Caller.COMPARISON, tuning, Account(fitted_ef_search=40)).ef_search == 100


@pytest.mark.parametrize("caller", [Caller.SEARCH, Caller.NEAREST, Caller.FAILURE_MODES])
def test_search_nearest_and_failure_modes_scan_at_the_configured_width(caller: Caller) -> None:
    assert plan(caller, TUNING, Account(fitted_ef_search=40)).ef_search == 100


def test_the_timeline_takes_the_fit_and_reads_as_many_candidates_as_it_counts() -> None:
    planned = plan(Caller.TIMELINE, TUNING, Account(fitted_ef_search=40, routed_exact=True))
    assert planned.ef_search == 40
    assert planned.overfetch == ranking.TIMELINE_NEIGHBOURS_PER_PROBE
    assert not planned.routed and planned.exact_scan_max_chunks == 1000
    assert planned.widen_ef_search is None and planned.check_budget_ms == 0


def test_only_a_comparison_is_routed_exact() -> None:
    routed = Account(routed_exact=True)
    comparison = plan(Caller.COMPARISON, TUNING, routed)
    assert comparison.routed and comparison.exact
    assert comparison.path(10**8, own_index=True) is LookupPath.EXACT
    for caller in Caller:
        if caller is not Caller.COMPARISON:
            assert not plan(caller, TUNING, routed).routed, caller


def test_search_checks_its_dense_leg_but_never_widens_it() -> None:
    planned = plan(Caller.SEARCH, TUNING)
    assert planned.check_budget_ms == 800 and planned.widen_ef_search is None


def test_no_retry_when_it_would_be_no_wider() -> None:
    tuning = dataclasses.replace(TUNING, ef_search_retry=100)
    assert plan(Caller.COMPARISON, tuning).widen_ef_search is None


def test_the_check_budget_is_never_more_than_the_comparison_s() -> None:
    tuning = dataclasses.replace(TUNING, verify_timeout_ms=5000)
    assert plan(Caller.COMPARISON, tuning).check_budget_ms == 2000


def test_failure_modes_are_exact_within_their_own_budget() -> None:
    planned = plan(Caller.FAILURE_MODES, TUNING)
    assert planned.exact
    assert planned.settings.timeout_ms == 30_000
    assert planned.path(10**8, own_index=True) is LookupPath.EXACT
    assert planned.widen_ef_search is None and planned.check_budget_ms == 0


def test_the_check_of_a_plan_is_exact_and_neither_widened_nor_checked_again() -> None:
    checked = plan(Caller.COMPARISON, TUNING).checked()
    assert checked.exact and checked.widen_ef_search is None and checked.check_budget_ms == 0
    assert checked.path(10**8, own_index=True) is LookupPath.EXACT


@pytest.mark.parametrize(
    ("comparable", "own_index", "registered", "expected"),
    [
        (1000, False, False, LookupPath.EXACT),  # at the exact scan's size
        (1000, True, True, LookupPath.EXACT),
        (1001, True, True, LookupPath.ACCOUNT_INDEX),  # its own index, the tail beside it
        (1001, False, True, LookupPath.EXACT),  # registered, not ready: the shared lacks rows
        (1001, False, False, LookupPath.INDEX),  # none of its own: the shared index
    ],
)
def test_every_path_by_size(
    comparable: int, own_index: bool, registered: bool, expected: LookupPath
) -> None:
    assert plan(Caller.COMPARISON, TUNING).path(comparable, own_index, registered) is expected


def test_the_limits_carry_the_plan_and_the_caller_s_bounds() -> None:
    planned = plan(Caller.SEARCH, TUNING)
    limits = planned.limits(floor=0.3, floors=(("m", 0.4),))
    assert limits.overfetch == 120 and limits.exact_scan_max_chunks == 1000
    assert limits.per_probe == ranking.SIMILAR_NEIGHBOURS_PER_PROBE
    assert limits.floor_for("m") == 0.4 and limits.floor_for("other") == 0.3


def test_every_caller_says_what_of_the_plan_it_takes() -> None:
    assert set(APPLIES) == set(Caller)


# Each caller's module, and the caller whose plan it takes.
CALLERS = {
    "resolvers/comparison/phases.py": {Caller.COMPARISON, Caller.NEAREST},
    "resolvers/comparison/window_pass.py": {Caller.FAILURE_MODES},
    "resolvers/comparison/timeline.py": {Caller.TIMELINE},
    "resolvers/comparison/search.py": {Caller.SEARCH, Caller.NEAREST},
    "resolvers/failure_modes.py": {Caller.EARLIER},
}


def planned_callers(path: Path) -> set[Caller]:
    """The callers a module asks `plan` or `account_plan` for (`Caller.X` among the args)."""
    found: set[Caller] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if not isinstance(node, ast.Call) or not isinstance(node.func, ast.Name):
            continue
        if node.func.id not in ("plan", "account_plan"):
            continue
        for arg in node.args:
            match arg:
                case ast.Attribute(value=ast.Name(id="Caller"), attr=name):
                    found.add(Caller[name])
    return found


@pytest.mark.parametrize("module", sorted(CALLERS))
def test_each_caller_takes_its_plan_from_the_rule(module: str) -> None:
    assert planned_callers(ROOT / module) == CALLERS[module]


def test_every_caller_has_a_module_that_asks_for_its_plan() -> None:
    assert set().union(*CALLERS.values()) == set(Caller)


def test_no_lookup_module_reads_the_plan_s_settings_itself() -> None:
    """The settings the plan decides from are read by the rule alone (and the fit's switch
    by the module that reads the fit for it)."""
    decided = {"exact_scan_max_chunks", "ef_search_retry", "verify_budget_ms", "overfetch"}
    for path in (ROOT / "resolvers" / "comparison").glob("*.py"):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        read = {
            node.attr
            for node in ast.walk(tree)
            if isinstance(node, ast.Attribute)
            and isinstance(node.value, ast.Name)
            and node.value.id == "tuning"
        }
        assert not read & decided, (path.name, read & decided)


def test_the_architecture_quotes_the_lookup_rule_the_product_runs() -> None:
    """docs/architecture.md quotes `choose_path` (its docstring left out) as it is."""
    source = inspect.getsource(lookup_path.choose_path)
    function = ast.parse(source).body[0]
    assert isinstance(function, ast.FunctionDef)
    doc = function.body[0]
    lines = source.splitlines()
    del lines[doc.lineno - 1 : doc.end_lineno]
    quoted = "\n".join(lines)
    page = (ROOT / "docs" / "architecture.md").read_text(encoding="utf-8")
    assert f"```python\n{quoted}\n```" in page
