"""Embeddings cached on disk by (model key, sha256 of the text), so trying a chunking or
weighting variant re-embeds only the chunks it changed. Lives in bench/.cache (gitignored)."""

from __future__ import annotations

import hashlib
import sqlite3
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from bench.common.paths import CACHE
from indexer.embedders import Embedder


class CachedEmbedder:
    """Wraps an embedder; `key` names what the vectors depend on (identity, and fit)."""

    def __init__(self, inner: Embedder, key: str | None = None, path: Path | None = None) -> None:
        self.inner = inner
        self.identity = inner.identity
        self.max_tokens = inner.max_tokens
        self.usd_per_1k_tokens = inner.usd_per_1k_tokens
        self.key = key or str(inner.identity)
        self.misses = 0
        path = path or CACHE / "vectors.sqlite"
        path.parent.mkdir(parents=True, exist_ok=True)
        self.db = sqlite3.connect(path, check_same_thread=False)  # the worker embeds in a thread
        self.db.execute("CREATE TABLE IF NOT EXISTS v (k BLOB PRIMARY KEY, vec BLOB)")

    def __getattr__(self, name: str) -> object:
        return getattr(self.inner, name)

    def token_cost(self, word: str) -> int:
        return self.inner.token_cost(word)

    def _k(self, text: str) -> bytes:
        return hashlib.sha256(f"{self.key}\0{text}".encode()).digest()

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        keys = [self._k(t) for t in texts]
        found: dict[bytes, np.ndarray] = {}
        for start in range(0, len(keys), 500):
            part = keys[start : start + 500]
            marks = ",".join("?" * len(part))
            for k, blob in self.db.execute(f"SELECT k, vec FROM v WHERE k IN ({marks})", part):
                found[k] = np.frombuffer(blob, dtype=np.float32)
        missing = sorted({i for i, k in enumerate(keys) if k not in found}, key=keys.__getitem__)
        missing_keys: dict[bytes, int] = {}
        for i in missing:
            missing_keys.setdefault(keys[i], i)
        if missing_keys:
            order = list(missing_keys.items())
            vectors = self.inner.embed([texts[i] for _, i in order])
            self.misses += len(order)
            rows = [
                (k, v.astype(np.float32).tobytes())
                for (k, _), v in zip(order, vectors, strict=True)
            ]
            self.db.executemany("INSERT OR REPLACE INTO v VALUES (?, ?)", rows)
            self.db.commit()
            for (k, _), v in zip(order, vectors, strict=True):
                found[k] = v.astype(np.float32)
        return np.stack([found[k] for k in keys]) if keys else np.zeros((0, 0), np.float32)


def cached_minilm() -> CachedEmbedder:
    """all-MiniLM-L6-v2 as the product runs it (int8 ONNX), its vectors cached apart from the
    torch model's that earlier runs cached under the same identity."""
    from indexer.onnx_minilm import OnnxMiniLM

    return CachedEmbedder(OnnxMiniLM(), key="local:all-minilm-l6-v2@384|onnx-int8 1.0.0")


def cached_torch_minilm() -> CachedEmbedder:
    """all-MiniLM-L6-v2 under torch (bench/common/torch_minilm.py), its vectors cached apart."""
    from bench.common.torch_minilm import torch_embedder

    return CachedEmbedder(torch_embedder(), key="local:all-minilm-l6-v2@384|torch")
