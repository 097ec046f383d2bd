"""What exact checks cost per account: a check predicted to reach its budget is not started."""

from __future__ import annotations

import uuid

import pytest

from resolvers.comparison import check_costs
from resolvers.comparison.check_costs import CheckCosts

ACCOUNT, OTHER = uuid.uuid4(), uuid.uuid4()


def test_an_account_nothing_is_known_of_is_checked() -> None:
    assert CheckCosts().affordable(ACCOUNT, 1000, 500)


def test_a_check_that_ran_out_of_budget_predicts_as_many_lookups_would() -> None:
    checks = CheckCosts()
    checks.learn(ACCOUNT, 4, 500)  # four lookups did not finish in 500 ms
    assert not checks.affordable(ACCOUNT, 4, 500)
    assert not checks.affordable(ACCOUNT, 5, 500)
    assert checks.affordable(ACCOUNT, 3, 500)  # fewer might
    assert checks.affordable(OTHER, 4, 500)  # another account is its own


def test_a_check_that_finished_sets_the_cost_of_a_lookup() -> None:
    checks = CheckCosts()
    checks.learn(ACCOUNT, 2, 200)  # 100 ms a lookup
    assert checks.affordable(ACCOUNT, 4, 500)
    assert not checks.affordable(ACCOUNT, 5, 500)
    checks.learn(ACCOUNT, 1, 20)  # the latest check is what counts
    assert checks.affordable(ACCOUNT, 20, 500)


def test_what_was_learned_expires(monkeypatch: pytest.MonkeyPatch) -> None:
    now = [1000.0]
    monkeypatch.setattr(check_costs.time, "monotonic", lambda: now[0])
    checks = CheckCosts(ttl_s=60)
    checks.learn(ACCOUNT, 1, 500)
    assert not checks.affordable(ACCOUNT, 1, 500)
    now[0] += 60
    assert checks.affordable(ACCOUNT, 1, 500)


def test_the_accounts_kept_are_bounded(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(check_costs, "CHECK_COSTS_ACCOUNTS", 2)
    checks = CheckCosts()
    first, *rest = [uuid.uuid4() for _ in range(3)]
    for account in (first, *rest):
        checks.learn(account, 1, 500)
    assert checks.affordable(first, 1, 500)  # the least recently used one was let go
    assert not any(checks.affordable(a, 1, 500) for a in rest)


def test_an_account_whose_exact_lookups_cost_no_more_is_looked_up_exactly(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    now = [1000.0]
    monkeypatch.setattr(check_costs.time, "monotonic", lambda: now[0])
    checks = CheckCosts(ttl_s=60)
    for _ in range(check_costs.ROUTE_MIN_SAMPLES):  # 50 ms a lookup, scan and checks together
        checks.learn_approximate(ACCOUNT, 8, 400)
        checks.learn_approximate(OTHER, 8, 400)
    assert not checks.routes_exact(ACCOUNT)  # what an exact lookup costs is not known
    checks.learn(ACCOUNT, 2, 60)  # a check: 30 ms a lookup
    assert checks.routes_exact(ACCOUNT) and not checks.routes_exact(OTHER)
    checks.learn_approximate(ACCOUNT, 0, 0)  # a batch without approximate lookups: nothing
    assert checks.routes_exact(ACCOUNT)
    now[0] += 60  # forgotten: the approximate path is tried again
    assert not checks.routes_exact(ACCOUNT)
    checks.learn(ACCOUNT, 2, 60)
    checks.learn_approximate(ACCOUNT, 8, 400)  # one comparison is not enough to route
    assert not checks.routes_exact(ACCOUNT)


def test_an_approximate_path_that_pays_is_kept() -> None:
    checks = CheckCosts()
    for _ in range(3):
        checks.learn_approximate(ACCOUNT, 8, 160)  # 20 ms a lookup
    checks.learn(ACCOUNT, 2, 60)  # exact: 30
    assert not checks.routes_exact(ACCOUNT)


def test_one_cold_or_dear_comparison_does_not_flip_the_path() -> None:
    """The approximate cost is the median of the last few comparisons: the first (its index
    read from disk) or one dear session among cheap ones leaves the account approximate;
    most of them dear routes it."""
    checks = CheckCosts()
    checks.learn(ACCOUNT, 1, 30)  # exact: 30 ms a lookup
    for cost in (500, 20, 20):  # cold first, then warm
        checks.learn_approximate(ACCOUNT, 1, cost)
    assert not checks.routes_exact(ACCOUNT)
    checks.learn_approximate(ACCOUNT, 1, 320)  # one dear session: 500 20 20 320, median 20
    assert not checks.routes_exact(ACCOUNT)
    for _ in range(3):
        checks.learn_approximate(ACCOUNT, 1, 45)  # the last 5: 20 320 45 45 45, median 45
    assert check_costs.ROUTE_SAMPLES == 5 and checks.routes_exact(ACCOUNT)


def test_a_check_past_its_budget_never_routes_exact() -> None:
    checks = CheckCosts()
    checks.learn(ACCOUNT, 1, 10, finished=False)  # a lower bound only
    for _ in range(3):
        checks.learn_approximate(ACCOUNT, 8, 400)
    assert not checks.routes_exact(ACCOUNT)
