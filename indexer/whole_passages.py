"""A dense model that reads fewer tokens than a passage holds, made to read all of it.

The dense model embeds the configured model's passages, so that both spaces hold the same
passages and the configured model's comparisons do not change when an account adds a dense
model (cutting the windows for all-MiniLM-L6-v2's 254 word pieces cost tau-bench's P@1 0.865
-> 0.830). A passage longer than the dense model reads is cut into consecutive windows of at
most that many of its tokens, each embedded, and their vectors averaged (then normalised):
cutting it short instead kept only its first 254 word pieces (tau-bench hit@5 of the dense
leg 0.880 -> 0.740, bench/results/search-both.md). The windows' own vectors are kept too
(session_chunk_windows): a search scores a passage by its best window, which the average
blurs."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from data.model_identity import ModelIdentity
from indexer.embedders import Embedder


class WholePassages:
    """The inner embedder, reading every window of a long passage."""

    max_tokens: int | None = None  # every passage is read whole

    def __init__(self, inner: Embedder) -> None:
        self.inner = inner
        self.identity: ModelIdentity = inner.identity
        self.usd_per_1k_tokens = inner.usd_per_1k_tokens
        # The window a model reads best, when it names one (all-MiniLM-L6-v2: the length it
        # was trained on), else as much as it reads.
        self.limit = getattr(inner, "window_tokens", inner.max_tokens)

    def token_cost(self, word: str) -> int:
        return self.inner.token_cost(word)

    def windows(self, text: str) -> list[str]:
        """The text as consecutive runs of whole words of at most the inner model's tokens
        (a word longer than that is a window of its own, which the model reads cut)."""
        if self.limit is None:
            return [text]
        out: list[str] = []
        words: list[str] = []
        used = 0
        for word in text.split():
            cost = max(1, self.token_cost(word))
            if words and used + cost > self.limit:
                out.append(" ".join(words))
                words, used = [], 0
            words.append(word)
            used += cost
        return [*out, " ".join(words)] if words else out or [text]

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        return self.embed_windows(texts)[0]

    def embed_windows(self, texts: Sequence[str]) -> tuple[np.ndarray, list[np.ndarray]]:
        """Each text's vector (its windows' average, normalised) and its windows' own
        vectors (one row a window): a search scores a passage by its best window."""
        owners: list[int] = []
        pieces: list[str] = []
        for n, text in enumerate(texts):
            for window in self.windows(text):
                owners.append(n)
                pieces.append(window)
        vectors = np.asarray(self.inner.embed(pieces), dtype=np.float64)
        summed = np.zeros((len(texts), vectors.shape[1]), dtype=np.float64)
        np.add.at(summed, owners, vectors)
        norms = np.linalg.norm(summed, axis=1, keepdims=True)
        averaged = (summed / np.where(norms > 0, norms, 1.0)).astype(np.float32)
        at = np.asarray(owners)
        return averaged, [vectors[at == n].astype(np.float32) for n in range(len(texts))]
