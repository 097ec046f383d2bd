"""The figures of search by description (hit@5, P@5, MRR@10, empty answers), the fusion order
and the BM25 baseline's ranking, on hand-worked cases."""

from __future__ import annotations

from uuid import uuid4

import pytest

from bench.quality import labelled
from bench.search import metrics
from bench.search.baselines import SessionBM25, fused, terms


def test_figures_are_means_over_the_descriptions() -> None:
    relevant = {"q1": {"a", "b"}, "q2": {"c"}, "q3": {"d"}}
    rankings = {
        "q1": ["x", "a", "y", "b", "z", "w"],  # first relevant at 2; 2 of 5
        "q2": ["x", "y", "z", "w", "v", "u", "t", "c"],  # at 8: no hit@5, MRR 1/8
        "q3": [],  # an empty answer
    }
    figures = metrics.figures(rankings, relevant)
    assert figures.queries == 3 and figures.empty == 1
    assert figures.hit_at_5 == pytest.approx(1 / 3)
    assert figures.precision_at_5 == pytest.approx((2 / 5) / 3)
    assert figures.mrr_at_10 == pytest.approx((1 / 2 + 1 / 8) / 3)


def test_a_relevant_session_past_ten_earns_no_reciprocal_rank() -> None:
    ranked = [str(i) for i in range(11)]
    assert metrics.reciprocal_rank(ranked, {"10"}) == 0.0
    assert metrics.reciprocal_rank(ranked, {"9"}) == pytest.approx(0.1)
    assert metrics.precision(["a"], {"a"}) == pytest.approx(0.2)  # a short answer's gaps miss


def test_a_description_without_a_ranking_is_an_error() -> None:
    with pytest.raises(ValueError, match="1 description"):
        metrics.figures({"q1": ["a"]}, {"q1": {"a"}, "q2": {"b"}})


def test_fusion_rewards_agreement_between_the_legs() -> None:
    # a: 1/61 + 1/63; b: 1/62 + 1/61; c: 1/63 + 1/62; d only in one leg
    assert fused([["a", "b", "c"], ["b", "c", "a", "d"]]) == ["b", "a", "c", "d"]
    assert fused([["a", "b"], ["b", "a"]]) == ["a", "b"]  # a tie keeps first-named order


def test_bm25_ranks_the_session_with_the_rarer_shared_words_first() -> None:
    texts = {
        "s0": "the flight was delayed and the customer asked for compensation",
        "s1": "the customer asked to change the seat",
        "s2": "baggage allowance for gold members",
    }
    sessions = [
        labelled.Session(uuid4(), name, name, "agent", "", (labelled.Turn("user", "message", t),))
        for name, t in texts.items()
    ]
    index = SessionBM25(labelled.Corpus("tiny", sessions))
    assert index.rank("Delayed flight: customer wants compensation") == ["s0", "s1"]
    assert index.rank("the and of") == []  # stopwords only: nothing to look up
    assert index.rank("lounge access") == []  # no shared term: an empty answer
    assert terms("The JFK-LAX flight, isn't it?") == ["jfk", "lax", "flight", "isn", "t"]
