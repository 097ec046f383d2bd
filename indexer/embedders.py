"""Embedders behind one small interface, chosen by model identity."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Protocol

import numpy as np
from cachetools import LRUCache

from config.settings import default_of
from data.model_identity import ModelIdentity
from indexer import lexical
from indexer.lexical import Fit, LexicalEmbedder
from indexer.onnx_minilm import MINILM, ModelFileRefused, OnnxMiniLM

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


Factory = Callable[[], Embedder]
# A provider serves any model it is asked for (`openai:<model>@<dimensions>`).
ProviderFactory = Callable[[ModelIdentity], Embedder]


def minilm() -> Embedder:
    """all-MiniLM-L6-v2 (indexer/onnx_minilm.py); a model file that is missing or not the
    pinned one makes it unavailable, by name."""
    try:
        return OnnxMiniLM()
    except (ImportError, ModelFileRefused) as exc:
        raise EmbedderUnavailable(f"{MINILM}: {exc}") from None


BUILTIN: dict[str, Factory] = {str(lexical.UNFITTED): LexicalEmbedder, str(MINILM): minilm}


# Embedders built per account (a lexical fit's, a provider's model) kept at once, the least
# recently used let go past it: a server asked by many accounts holds this many, not all.
# Each is small (a fit's weights, a client) and built again in milliseconds.
RECENT_EMBEDDERS: int = default_of("embedders_kept")


class Registry:
    """Embedders by model identity, built on first use: an identity's own factory first
    (kept: MiniLM loads its model once), else its provider's (kept among the `kept` most
    recently used); a fitted lexical identity is known once its fit was handed over."""

    def __init__(
        self,
        factories: dict[str, Factory] | None = None,
        providers: Mapping[str, ProviderFactory] | None = None,
        kept: int = RECENT_EMBEDDERS,
    ) -> None:
        self.factories = dict(BUILTIN if factories is None else factories)
        self.providers = dict(providers or {})
        # one per factory at most: the factories are fixed when the registry is made
        self._built: dict[str, Embedder] = {}
        self._recent: LRUCache[str, Embedder] = LRUCache(maxsize=kept)

    def get(self, identity: ModelIdentity) -> Embedder:
        key = str(identity)
        if key in self._built:
            return self._built[key]
        if key in self._recent:
            return self._recent[key]
        factory = self.factories.get(key)
        provider = self.providers.get(identity.provider)
        if factory is not None:
            self._built[key] = factory()
            return self._built[key]
        if provider is not None:
            self._recent[key] = provider(identity)
            return self._recent[key]
        known = ", ".join([*sorted(self.factories), *(f"{p}:*" for p in self.providers)])
        raise EmbedderUnavailable(f"no embedder for {key} (this indexer has: {known})")

    def kept(self, identity: ModelIdentity) -> Embedder | None:
        """The embedder of this identity if one was built or handed over and is still kept."""
        key = str(identity)
        return self._built.get(key) or self._recent.get(key)

    def fitted(self, fit: Fit) -> Embedder:
        """The lexical embedder of this fit, under the fit's identity."""
        key = str(fit.identity)
        if key not in self._recent:
            self._recent[key] = LexicalEmbedder(fit)
        return self._recent[key]
