"""Embedders: deterministic unit vectors of the identity's dimensions, chosen by identity."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from config.settings import Settings, SettingsError, default_of
from data.model_identity import ModelIdentity
from indexer.embedders import DEFAULT_MODEL, EmbedderUnavailable, Registry, tokens_of
from indexer.lexical import UNFITTED, Fit, LexicalEmbedder, features, is_lexical
from indexer.onnx_minilm import (
    MINILM,
    MODEL_SHA256,
    ModelFileRefused,
    OnnxMiniLM,
    checked,
    model_file,
)

TEXTS = ["I want to cancel reservation H8Q05L", "book a flight from JFK to SEA on May 20", ""]


def test_lexical_embedder_gives_unit_vectors_of_its_dimensions() -> None:
    vectors = LexicalEmbedder().embed(TEXTS)
    assert vectors.shape == (3, 384) and vectors.dtype == np.float32
    assert np.allclose(np.linalg.norm(vectors[:2], axis=1), 1.0, atol=1e-6)
    assert not vectors[2].any()  # no feature, no direction


def test_lexical_embedder_is_deterministic_across_processes() -> None:
    fit = Fit.of_sessions([[TEXTS[0]], [TEXTS[0] + " again"], [TEXTS[1]]])
    here = LexicalEmbedder(fit).embed(TEXTS[:1])[0]
    code = (
        "from indexer.lexical import Fit, LexicalEmbedder;"
        f"fit = Fit.of_sessions([[{TEXTS[0]!r}], [{TEXTS[0] + ' again'!r}], [{TEXTS[1]!r}]]);"
        f"print(fit.identity, repr(LexicalEmbedder(fit).embed([{TEXTS[0]!r}])[0].tolist()))"
    )
    other = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        check=True,
        env={"PYTHONHASHSEED": "12345"},
    )
    identity, vector = other.stdout.split(" ", 1)
    assert identity == str(fit.identity) and here.any()
    assert np.array_equal(here, np.array(eval(vector), dtype=np.float32))


def test_shared_rare_words_weigh_more_than_common_ones() -> None:
    sessions = [
        ["cancel reservation H8Q05L refund"],
        ["please cancel reservation H8Q05L"],
        ["cancel the baggage claim"],
        ["cancel a flight, reservation ZZ1"],
    ]
    embedder = LexicalEmbedder(Fit.of_sessions(sessions))
    a, b, c = embedder.embed([s[0] for s in sessions[:3]])
    assert float(a @ b) > 0.5 > float(a @ c)


def test_a_fit_weighs_only_features_of_two_sessions_or_more() -> None:
    fit = Fit.of_sessions([["alpha beta"], ["alpha gamma"], ["alpha delta"]])
    assert len(fit.keys) == 1  # "alpha": beta, gamma and delta match nothing
    assert not LexicalEmbedder(fit).embed(["beta gamma"]).any()
    assert Fit.from_bytes(fit.sessions, fit.to_bytes()).identity == fit.identity
    assert is_lexical(fit.identity) and fit.identity != UNFITTED and fit.identity.dimensions == 384


def test_every_script_gets_features() -> None:
    assert set(features("数据库迁移失败")) >= {"数据", "迁移", "失败"}  # character pairs
    assert set(features("データベースの移行")) >= {"デー", "移行"}
    assert set(features("การย้ายฐานข้อมูลล้มเหลว")) >= {"กา", "ล้"}
    assert set(features("Миграция не удалась")) == {"миграция", "не", "удалась"}
    assert set(features("فشل ترحيل قاعدة البيانات")) == {"فشل", "ترحيل", "قاعدة", "البيانات"}
    assert set(features("हिन्दी भाषा")) == {"हिन्दी", "भाषा"}  # vowel signs stay in words
    assert set(features("deploy 👍🎉")) == {"deploy", "👍", "🎉"}
    assert features("ok yes please") == {}  # stopwords only: no feature
    assert set(features('{"flight_number": "HAT057"} the HAT057')) == {"hat057"}


def test_registry_picks_by_identity_and_refuses_unknown_ones() -> None:
    registry = Registry()
    embedder = registry.get(DEFAULT_MODEL)
    assert embedder.identity == UNFITTED and registry.get(DEFAULT_MODEL) is embedder
    fit = Fit.of_sessions([["one two"], ["one two"]])
    assert registry.fitted(fit).identity == fit.identity and registry.get(fit.identity)
    with pytest.raises(EmbedderUnavailable, match="no embedder"):
        registry.get(ModelIdentity.parse("openai:text-embedding-3-small@1536"))


def test_tokens_are_words_for_the_lexical_embedder() -> None:
    assert tokens_of(LexicalEmbedder(), "one two  three") == 3


def test_minilm_embedder_is_deterministic_with_384_dimensions() -> None:
    embedder = Registry().get(MINILM)
    first, second = embedder.embed(TEXTS[:2]), embedder.embed(TEXTS[:2])
    assert first.shape == (2, 384)
    assert np.allclose(first, second, atol=1e-6)
    assert np.allclose(np.linalg.norm(first, axis=1), 1.0, atol=1e-5)
    assert embedder.max_tokens == 254
    assert embedder.token_cost('{"first_name":') > 1  # word pieces, not words


def test_minilm_places_paraphrases_nearer_than_other_topics() -> None:
    cancel, again, other = (
        Registry()
        .get(MINILM)
        .embed(
            [
                "I want to cancel my reservation",
                "please call off my booking",
                "the unit test failed with a KeyError",
            ]
        )
    )
    assert float(cancel @ again) > float(cancel @ other) + 0.2


def test_a_model_file_that_is_not_the_pinned_one_is_refused_by_name(tmp_path: Path) -> None:
    changed = tmp_path / "model.onnx"
    changed.write_bytes(model_file().read_bytes()[:-1] + b"x")
    with pytest.raises(ModelFileRefused, match=r"model.onnx: sha256 [0-9a-f]{64}, expected"):
        OnnxMiniLM(model=changed)
    with pytest.raises(ModelFileRefused, match="cannot be read"):
        checked(tmp_path / "missing.onnx", MODEL_SHA256)


def test_minilm_vectors_match_the_torch_models_reference() -> None:
    # tests/data/minilm_reference.json: four texts (a chat, a traceback, a tool's JSON, a
    # search text) embedded once by the torch model this one replaced.
    reference = json.loads(
        (Path(__file__).parents[1] / "data" / "minilm_reference.json").read_text()
    )
    ours = Registry().get(MINILM).embed(reference["texts"])
    cosines = (ours * np.asarray(reference["vectors"], dtype=np.float32)).sum(axis=1)
    assert cosines.min() >= 0.999, cosines


def fitted_on(n: int) -> Fit:
    """A one-feature fit of its own identity."""
    one = np.array([n], dtype=np.uint64)
    return Fit(1, one, np.array([1.0], dtype=np.float32), np.array([], dtype=np.uint64))


def test_the_registry_keeps_a_bounded_number_of_fitted_embedders() -> None:
    """A server asked by many accounts keeps the recent fits, not every one it met; the
    built-in models it keeps whatever the number of fits."""
    from indexer import embedders

    registry = Registry()
    builtin = registry.get(UNFITTED)
    first = registry.fitted(fitted_on(0))
    assert registry.fitted(fitted_on(0)) is first
    for n in range(1, embedders.RECENT_EMBEDDERS + 5):
        registry.fitted(fitted_on(n))
    assert len(registry._recent) == embedders.RECENT_EMBEDDERS
    assert registry.fitted(fitted_on(0)) is not first  # let go, and built again when asked
    assert registry.get(UNFITTED) is builtin


def test_the_number_of_embedders_kept_is_the_setting() -> None:
    """SIMILAR_SESSIONS_EMBEDDERS_KEPT is the registry's bound (256 by default); the least
    recently used is the one let go, a fit asked again stays."""
    from indexer import embedders
    from indexer.commands import registry_for

    assert embedders.RECENT_EMBEDDERS == default_of("embedders_kept") == 256
    registry = registry_for(Settings.from_env({"SIMILAR_SESSIONS_EMBEDDERS_KEPT": "3"}))
    built = [registry.fitted(fitted_on(n)) for n in range(3)]
    assert registry.fitted(fitted_on(0)) is built[0]  # now the most recently used
    registry.fitted(fitted_on(3))  # a fourth: fit 1, the least recently used, goes
    assert len(registry._recent) == 3
    assert registry.fitted(fitted_on(0)) is built[0]
    assert registry.fitted(fitted_on(2)) is built[2]
    assert registry.fitted(fitted_on(1)) is not built[1]
    with pytest.raises(SettingsError, match="SIMILAR_SESSIONS_EMBEDDERS_KEPT"):
        Settings.from_env({"SIMILAR_SESSIONS_EMBEDDERS_KEPT": "0"})
