"""A dense model reading a passage longer than its window: consecutive windows of whole
words, each embedded; the passage's vector their normalised average, and each window's own."""

from __future__ import annotations

import numpy as np

from indexer.whole_passages import WholePassages
from tests.support.embedders import WordsEmbedder


class Windowed(WordsEmbedder):
    max_tokens: int | None = 10
    window_tokens = 4  # reads 10, reads 4 best


def test_windows_are_the_models_own_length_when_it_names_one() -> None:
    reader = WholePassages(Windowed())
    assert reader.windows("one two three four five six seven eight nine") == [
        "one two three four",
        "five six seven eight",
        "nine",
    ]
    assert WholePassages(WordsEmbedder()).windows("one two three") == ["one two three"]


def test_a_passage_keeps_each_windows_vector_beside_their_average() -> None:
    inner = Windowed()
    texts = ["lock timeout on orders table during the migration", "refund"]
    averaged, windows = WholePassages(inner).embed_windows(texts)
    assert [len(w) for w in windows] == [2, 1]
    assert np.allclose(windows[0][0], inner.vector("lock timeout on orders"), atol=1e-6)
    summed = windows[0].sum(axis=0)
    assert np.allclose(averaged[0], summed / np.linalg.norm(summed), atol=1e-6)
    assert np.allclose(averaged[1], windows[1][0], atol=1e-6)
