"""A deterministic test embedder of any width and identity: the lexical features, every one
weighing 1, hashed into `width` dimensions (tests that need real vectors without a fit)."""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from data.model_identity import ModelIdentity
from indexer.keys import feature_key
from indexer.lexical import features


class WordsEmbedder:
    max_tokens: int | None = None
    usd_per_1k_tokens: float = 0.0

    def __init__(self, width: int = 384, identity: str | None = None) -> None:
        self.width = width
        self.identity = ModelIdentity.parse(identity or f"local:words-{width}@{width}")

    def token_cost(self, word: str) -> int:
        return 1

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        return np.stack([self.vector(t) for t in texts]).astype(np.float32)

    def vector(self, text: str) -> np.ndarray:
        vector = np.zeros(self.width, dtype=np.float64)
        for feature, count in features(text).items():
            key = feature_key(feature)
            vector[(key >> 1) % self.width] += (1.0 if key & 1 else -1.0) * (1 + math.log(count))
        norm = float(np.linalg.norm(vector))
        return vector / norm if norm else vector
