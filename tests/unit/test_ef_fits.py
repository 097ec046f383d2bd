"""The ef_search fitted on an account's own index: the lowest candidate whose recall holds on
every sample and on average; none when none does, or when too few probes were measured."""

from __future__ import annotations

from config.settings import default_of
from data.ef_fits import (
    FIT_CANDIDATES,
    FIT_MIN_RECALL,
    FIT_MIN_SAMPLES,
    FIT_NEIGHBOURS,
    FIT_OVERFETCH,
    EfFit,
    chosen,
)
from resolvers.rules.ranking import SIMILAR_NEIGHBOURS_PER_PROBE

ALL_FOUND = [1.0] * FIT_MIN_SAMPLES


def test_the_lowest_candidate_that_holds_is_chosen() -> None:
    assert chosen({100: ALL_FOUND, 200: ALL_FOUND}) == 100
    assert chosen({200: ALL_FOUND, 100: ALL_FOUND}) == 100  # whatever the order given


def test_one_probe_below_the_worst_allowed_rules_a_candidate_out() -> None:
    missed = [*ALL_FOUND[1:], FIT_MIN_RECALL - 0.04]  # 24 of 25 would be 0.96: allowed
    assert chosen({100: missed, 200: ALL_FOUND}) == 200
    assert chosen({100: missed, 200: missed}) is None


def test_a_low_mean_rules_a_candidate_out_though_no_probe_is_below_the_worst() -> None:
    everywhere_a_little = [FIT_MIN_RECALL] * FIT_MIN_SAMPLES  # mean 0.96 < 0.99
    assert chosen({100: everywhere_a_little, 200: ALL_FOUND}) == 200


def test_too_few_measured_probes_fit_nothing() -> None:
    assert chosen({100: ALL_FOUND[1:], 200: ALL_FOUND[1:]}) is None
    assert chosen({}) is None


def test_the_fit_keeps_mean_and_worst_per_candidate() -> None:
    fit = EfFit(3, {100: [1.0, 0.96, 0.92], 200: [1.0, 1.0, 1.0]}, None)
    assert fit.measured == {100: (0.96, 0.92), 200: (1.0, 1.0)}
    assert fit.summary()["recall"] == {"100": [0.96, 0.92], "200": [1.0, 1.0]}


def test_the_fit_looks_up_as_a_comparison_does() -> None:
    assert FIT_NEIGHBOURS == SIMILAR_NEIGHBOURS_PER_PROBE
    assert default_of("hnsw_overfetch") == FIT_OVERFETCH


def test_every_candidate_is_narrower_than_the_configured_search() -> None:
    """A fit is only ever used below SIMILAR_SESSIONS_HNSW_EF_SEARCH: a candidate at or above
    it would be measured for nothing."""
    assert list(FIT_CANDIDATES) == sorted(FIT_CANDIDATES)
    assert max(FIT_CANDIDATES) < default_of("hnsw_ef_search")
