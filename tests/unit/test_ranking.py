"""The ranking's pure parts, without a database."""

import math
import uuid

import pytest

from resolvers.rules.ranking import (
    SIMILAR_BREADTH_WEIGHT,
    Band,
    Hit,
    band,
    comparison_model,
    page_after,
    probe_positions,
    rank_neighbours,
)


def ids(n: int) -> list[uuid.UUID]:
    return sorted(uuid.uuid4() for _ in range(n))


@pytest.mark.parametrize("n", range(0, 9))
def test_every_chunk_is_a_probe_up_to_eight(n: int) -> None:
    assert probe_positions(n) == list(range(n))


@pytest.mark.parametrize("n", [9, 10, 15, 16, 23, 100, 401, 10_007])
def test_probe_positions_follow_the_contract_formula(n: int) -> None:
    expected = [math.floor(i * (n - 1) / 7 + 0.5) for i in range(8)]
    positions = probe_positions(n)
    assert positions == expected
    assert positions[0] == 0 and positions[-1] == n - 1
    assert len(set(positions)) == 8


def test_probe_positions_round_half_up_exactly() -> None:
    # n = 15: i * 14 / 7 is whole; n = 22: i * 21 / 7 = 3i; n = 12: 11i/7 + 0.5.
    assert probe_positions(12) == [0, 2, 3, 5, 6, 8, 9, 11]


def test_comparison_model_prefers_the_configured_one_when_the_session_has_it() -> None:
    assert comparison_model("a:m@3", {"a:m@3": 1, "b:m@3": 9}) == "a:m@3"


def test_comparison_model_falls_back_to_the_most_held_then_smallest_identity() -> None:
    assert comparison_model("a:m@3", {"b:m@3": 2, "c:m@3": 5}) == "c:m@3"
    assert comparison_model(None, {"c:m@3": 4, "b:m@3": 4}) == "b:m@3"
    assert comparison_model("a:m@3", {}) is None


@pytest.mark.parametrize(
    ("similarity", "expected"),
    [
        (0.70, Band.CLOSE),
        (0.6999, Band.RELATED),
        (0.50, Band.RELATED),
        (0.4999, Band.LOOSE),
        (0.35, Band.LOOSE),
        (1.0, Band.CLOSE),
    ],
)
def test_band_cut_points(similarity: float, expected: Band) -> None:
    assert band(similarity) is expected


def test_score_is_best_similarity_plus_a_logarithmic_breadth_credit() -> None:
    a_session, b_session = ids(2)
    chunks = ids(9)
    hits = [Hit(0, chunks[0], a_session, 0.80)]
    hits += [Hit(0, c, b_session, 0.79) for c in chunks[1:]]
    ranked = rank_neighbours(hits, max_matches=2)
    # The contract's formula: 0.79 + 0.02 * ln 8 = 0.8316 outranks 0.80 + 0.
    assert [n.session_id for n in ranked] == [b_session, a_session]
    assert ranked[0].score == pytest.approx(0.79 + SIMILAR_BREADTH_WEIGHT * math.log(8))
    assert ranked[1].score == pytest.approx(0.80)


def test_the_best_passage_decides_when_it_is_clearly_better() -> None:
    a_session, b_session = ids(2)
    chunks = ids(9)
    hits = [Hit(0, chunks[0], a_session, 0.90)] + [Hit(0, c, b_session, 0.80) for c in chunks[1:]]
    assert [n.session_id for n in rank_neighbours(hits, 2)] == [a_session, b_session]


def test_breadth_breaks_ties_between_equal_best_passages() -> None:
    one, two = ids(2)
    c = ids(3)
    hits = [Hit(0, c[0], one, 0.75), Hit(0, c[1], two, 0.75), Hit(1, c[2], two, 0.60)]
    ranked = rank_neighbours(hits, max_matches=5)
    assert [n.session_id for n in ranked] == [two, one]
    assert ranked[0].matched_chunk_count == 2
    assert ranked[0].score == pytest.approx(0.75 + 0.02 * math.log(2))
    assert ranked[1].score == pytest.approx(0.75)


def test_full_ties_are_broken_on_session_id() -> None:
    sessions = ids(5)
    hits = [Hit(0, uuid.uuid4(), s, 0.6) for s in reversed(sessions)]
    assert [n.session_id for n in rank_neighbours(hits, 1)] == sessions


def test_a_chunk_hit_by_several_probes_counts_once_at_its_best_with_the_earliest_probe() -> None:
    session = uuid.uuid4()
    chunk = uuid.uuid4()
    hits = [Hit(3, chunk, session, 0.6), Hit(5, chunk, session, 0.9), Hit(1, chunk, session, 0.9)]
    [neighbour] = rank_neighbours(hits, max_matches=5)
    assert neighbour.matched_chunk_count == 1
    assert neighbour.similarity == 0.9
    assert [(m.chunk_id, m.probe, m.similarity) for m in neighbour.matches] == [(chunk, 1, 0.9)]


def test_matches_are_ordered_by_similarity_then_chunk_id_and_capped() -> None:
    session = uuid.uuid4()
    c = ids(4)
    hits = [
        Hit(0, c[3], session, 0.7),
        Hit(0, c[1], session, 0.7),
        Hit(0, c[0], session, 0.5),
        Hit(0, c[2], session, 0.8),
    ]
    [neighbour] = rank_neighbours(hits, max_matches=3)
    assert [m.chunk_id for m in neighbour.matches] == [c[2], c[1], c[3]]
    assert rank_neighbours(hits, max_matches=0)[0].matches == ()


def test_paging_never_repeats_or_skips() -> None:
    sessions = ids(23)
    hits = [Hit(0, uuid.uuid4(), s, 0.4 + (i % 4) * 0.1) for i, s in enumerate(sessions)]
    ranked = rank_neighbours(hits, 1)
    seen, after, more = [], None, True
    while more:
        page, more = page_after(ranked, after, 5)
        seen += page
        after = page[-1].sort_key if page else None
    assert [n.session_id for n in seen] == [n.session_id for n in ranked]
    assert len({n.session_id for n in seen}) == 23
