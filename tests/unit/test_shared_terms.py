"""Why two passages match: the pure choice of a pair's terms from weighted features, a
group's terms, and the fitted lexical model's weights they are chosen with."""

from __future__ import annotations

import math

from indexer.lexical import Fit, LexicalEmbedder
from resolvers.rules.shared_terms import SHARED_TERMS_MAX, group_terms, shared_terms


def test_the_heaviest_shared_terms_come_first_until_they_carry_most_of_the_similarity() -> None:
    a = {"deadlock": 3.0, "orders": 2.0, "table": 1.0, "mine": 5.0}
    b = {"deadlock": 2.0, "orders": 2.0, "table": 1.0, "theirs": 5.0}
    # parts: deadlock 6, orders 4, table 1 (of 11): 6 + 4 carry 91% >= 80%
    assert shared_terms(a, b) == ("deadlock", "orders")
    assert shared_terms(a, b, share=0.5) == ("deadlock",)
    assert shared_terms(a, b, share=1.0) == ("deadlock", "orders", "table")


def test_no_shared_feature_means_no_term_and_a_weight_of_zero_never_counts() -> None:
    assert shared_terms({"timeout": 1.0}, {"refund": 1.0}) == ()
    assert shared_terms({"timeout": 0.0, "lock": 1.0}, {"timeout": 4.0, "lock": 1.0}) == ("lock",)
    assert shared_terms({}, {}) == ()


def test_many_equal_terms_are_capped_and_ties_go_by_term() -> None:
    words = {f"w{n:02}": 1.0 for n in range(20)}
    chosen = shared_terms(words, words)
    assert len(chosen) == SHARED_TERMS_MAX
    assert chosen == tuple(sorted(words)[:SHARED_TERMS_MAX])


def test_the_fitted_weights_prefer_what_few_sessions_say() -> None:
    sessions = [[f"the booking {n} failed: payment declined for reservation"] for n in range(8)]
    sessions += [["seat map timeout on flight HAT136"], ["seat map timeout again on HAT136"]]
    fitted = LexicalEmbedder(Fit.of_sessions(sessions, template_min_sessions=100))
    one = fitted.weighted("payment declined: seat map timeout for HAT136")
    other = fitted.weighted("the seat map timeout, payment declined, HAT136")
    terms = shared_terms(one, other)
    assert set(terms) <= {"seat", "map", "timeout", "hat136"}
    assert "payment" not in terms  # in 8 of 10 sessions: it weighs little
    # the weight is the fit's idf times 1 + ln(count), as the vector's
    twice = fitted.weighted("timeout timeout")
    assert math.isclose(twice["timeout"], fitted.weighted("timeout")["timeout"] * (1 + math.log(2)))


def test_words_no_fit_weighs_are_left_out() -> None:
    fitted = LexicalEmbedder(Fit.of_sessions([["alpha beta"], ["alpha gamma"]]))
    assert set(fitted.weighted("alpha beta gamma delta")) == {"alpha"}  # in 2 sessions


def test_a_groups_terms_are_those_most_of_its_members_name() -> None:
    members = [
        ("deadlock", "orders"),
        ("orders", "deadlock", "retry"),
        ("deadlock",),
        ("retry",),
        (),
    ]
    # deadlock 3 of 5, orders 2, retry 2: at least half is 3 of 5 (2.5 rounds up)
    assert group_terms(members) == ("deadlock",)
    assert group_terms(members[:4]) == ("deadlock", "orders", "retry")  # orders named earlier
    assert group_terms([()]) == ()
    assert group_terms([]) == ()
