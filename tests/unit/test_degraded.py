from dataclasses import replace

import pytest

from resolvers.rules.degraded import SENTENCES, Facts, degraded, reasons_for

CONTRACT_ORDER = [
    "semantic_disabled_by_deployment",
    "semantic_not_enabled",
    "similar_session_not_embedded",
    "semantic_backfill_incomplete",
    "semantic_model_mismatch",
    "similar_window_applied",
    "similar_session_sampled",
    "similar_no_comparable_sessions",
]


def test_the_contracts_codes_come_first_in_its_order() -> None:
    assert list(SENTENCES)[: len(CONTRACT_ORDER)] == CONTRACT_ORDER


def test_reasons_are_ordered_and_detail_joins_one_sentence_each() -> None:
    block = degraded(True, {"similar_session_sampled", "semantic_model_mismatch"})
    assert block.reasons == ("semantic_model_mismatch", "similar_session_sampled")
    assert block.detail == (
        SENTENCES["semantic_model_mismatch"] + " " + SENTENCES["similar_session_sampled"]
    )


def test_no_reason_means_no_detail() -> None:
    assert degraded(True, set()).detail is None


def test_an_undocumented_code_is_refused() -> None:
    with pytest.raises(ValueError, match="undocumented"):
        degraded(True, {"made_up"})


def test_an_empty_windowed_answer_names_its_window() -> None:
    block = degraded(True, {"similar_window_applied", "similar_no_comparable_sessions"}, 14)
    assert block.detail is not None
    assert block.detail.count("last 14 days") == 2
    unwindowed = degraded(True, {"similar_no_comparable_sessions"})
    assert unwindowed.detail == SENTENCES["similar_no_comparable_sessions"]


def test_an_unchecked_approximate_answer_is_named_unless_the_comparison_timed_out() -> None:
    facts = Facts(
        has_vectors=True,
        pending=0,
        account_enabled=True,
        deployment_enabled=True,
        model="local:m@3",
        configured="local:m@3",
        window_applied=False,
        filter_applied=False,
        sampled=False,
        found_hits=True,
        comparable_elsewhere=True,
        timed_out=False,
        unverified=True,
    )
    assert reasons_for(facts) == {"similar_approximate_unverified"}
    assert reasons_for(replace(facts, unverified=False)) == set()
    assert reasons_for(replace(facts, timed_out=True)) == {"similar_comparison_timed_out"}
