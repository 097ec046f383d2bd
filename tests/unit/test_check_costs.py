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
