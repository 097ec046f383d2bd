"""What an embedding call costs: the tokens a provider bills, and a bound known beforehand.

Local embedders count their own tokens (`tokens_of`), so the bound and the bill are the same
number. A metered embedder (a hosted API) is billed by the provider's count, known only from
its answer; it also names a bound it never exceeds, so the daily cap is checked before a
call and never passed by one."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

import numpy as np

from indexer.embedders import Embedder, tokens_of
from indexer.whole_passages import WholePassages


@dataclass(frozen=True, slots=True)
class Embedding:
    """Unit vectors, one per text, and the tokens billed for them; and, from an embedder
    that reads a text in windows, each text's windows' vectors."""

    vectors: np.ndarray
    tokens: int
    windows: list[np.ndarray] | None = None


@runtime_checkable
class Metered(Protocol):
    """An embedder billed by its provider's count of tokens."""

    def token_bound(self, text: str) -> int:
        """Never fewer than the tokens the provider will bill for `text`."""
        ...

    def embed_metered(self, texts: Sequence[str]) -> Embedding:
        """Vectors and the tokens the provider reported for them."""
        ...


def token_bound(embedder: Embedder, text: str) -> int:
    """The most `text` can cost in tokens, known before it is embedded."""
    if isinstance(embedder, Metered):
        return embedder.token_bound(text)
    return tokens_of(embedder, text)


def embed_metered(embedder: Embedder, texts: Sequence[str]) -> Embedding:
    """Embed and say what it cost: the provider's count, or the local one."""
    if isinstance(embedder, Metered):
        return embedder.embed_metered(texts)
    tokens = sum(tokens_of(embedder, t) for t in texts)
    if isinstance(embedder, WholePassages):
        vectors, windows = embedder.embed_windows(texts)
        return Embedding(vectors, tokens, windows)
    return Embedding(embedder.embed(texts), tokens)
