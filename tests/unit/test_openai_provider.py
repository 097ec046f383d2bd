"""The `openai` provider against a local OpenAI-compatible server: vectors, the dimensions
parameter, batching by the endpoint's limits, usage, retries, timeouts and refusals."""

from __future__ import annotations

import time
from collections.abc import Iterator

import numpy as np
import pytest

from config.settings import Settings
from data.model_identity import ModelIdentity
from indexer import billing
from indexer.embedders import EmbedderUnavailable, Registry
from indexer.providers import EmbeddingFailed, providers_for
from indexer.providers.openai_compatible import OpenAIEmbedder
from tests.support.embedders import WordsEmbedder
from tests.support.fake_openai import (
    HANG,
    FakeOpenAI,
    Reply,
    fake_openai,
    rate_limited,
    server_error,
)

KEY = "sk-test-provider-key-0001"
SMALL = ModelIdentity.parse("openai:text-embedding-3-small@256")
OWN = ModelIdentity.parse("openai:nomic-embed-text@384")
TEXTS = ["cancel reservation H8Q05L", "book a flight from JFK to SEA", "baggage allowance"]


@pytest.fixture
def fake() -> Iterator[FakeOpenAI]:
    with fake_openai() as server:
        yield server


def embedder(fake: FakeOpenAI, identity: ModelIdentity = SMALL, **env: str) -> OpenAIEmbedder:
    settings = Settings.from_env(
        {
            "OPENAI_BASE_URL": fake.url,
            "OPENAI_API_KEY": KEY,
            "SIMILAR_SESSIONS_OPENAI_TIMEOUT_S": "5",
            **{f"SIMILAR_SESSIONS_OPENAI_{k.upper()}": v for k, v in env.items()},
        }
    )
    built = Registry(providers=providers_for(settings)).get(identity)
    assert isinstance(built, OpenAIEmbedder)
    return built


def test_vectors_come_from_the_endpoint_with_the_dimensions_parameter(fake: FakeOpenAI) -> None:
    result = billing.embed_metered(embedder(fake), TEXTS)
    expected = WordsEmbedder(256).embed(TEXTS)
    assert result.vectors.shape == (3, 256) and result.vectors.dtype == np.float32
    assert np.allclose(result.vectors, expected, atol=1e-6)
    assert result.tokens == sum(len(t.split()) for t in TEXTS)  # the answer's usage
    [request] = fake.seen
    assert request.path == "/v1/embeddings" and request.authorization == f"Bearer {KEY}"
    assert request.body == {
        "model": "text-embedding-3-small",
        "input": TEXTS,
        "dimensions": 256,
        "encoding_format": "float",
    }


def test_a_model_not_known_to_take_dimensions_is_not_sent_them(fake: FakeOpenAI) -> None:
    vectors = embedder(fake, OWN).embed(TEXTS)
    assert vectors.shape == (3, 384)
    assert "dimensions" not in fake.seen[0].body
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)


def test_a_batch_is_split_by_the_endpoints_input_limits(fake: FakeOpenAI) -> None:
    texts = [f"passage number {n} about flights" for n in range(7)]
    by_count = embedder(fake, max_inputs="3")
    result = billing.embed_metered(by_count, texts)
    assert [len(s.body["input"]) for s in fake.seen] == [3, 3, 1]
    assert np.allclose(result.vectors, WordsEmbedder(256).embed(texts), atol=1e-6)
    assert result.tokens == 5 * 7
    fake.seen.clear()
    bound = by_count.token_bound(texts[0])  # bytes + 2
    by_tokens = embedder(fake, max_request_tokens=str(2 * bound))
    by_tokens.embed(texts)
    assert [len(s.body["input"]) for s in fake.seen] == [2, 2, 2, 1]


def test_the_bound_is_never_below_the_billed_tokens(fake: FakeOpenAI) -> None:
    e = embedder(fake)
    for text in ["a", "flight", "数据库 的 连接 池", "x" * 100, "a b c d e"]:
        assert e.token_bound(text) >= len(text.split())
        assert e.token_bound(text) >= len(text.encode())


def test_a_server_without_usage_is_charged_the_bound() -> None:
    with fake_openai(usage=False) as fake:
        e = embedder(fake)
        assert billing.embed_metered(e, TEXTS).tokens == sum(e.token_bound(t) for t in TEXTS)


def test_429_is_retried_after_retry_after_then_succeeds(fake: FakeOpenAI) -> None:
    fake.script.append(rate_limited(retry_after_s=1))
    vectors = embedder(fake, max_retries="2").embed(TEXTS)
    assert vectors.shape == (3, 256)
    first, second = fake.seen
    assert second.at - first.at >= 0.95  # Retry-After: 1 was waited out
    assert first.body == second.body


def test_5xx_is_retried_and_a_provider_that_keeps_failing_raises_embedding_failed(
    fake: FakeOpenAI,
) -> None:
    fake.script.extend([server_error(500), server_error(503)])
    assert embedder(fake, max_retries="2").embed(TEXTS).shape == (3, 256)
    assert len(fake.seen) == 3
    fake.seen.clear()
    fake.script.extend([server_error(502)] * 3)
    with pytest.raises(EmbeddingFailed) as failed:
        embedder(fake, max_retries="2").embed(TEXTS)
    assert str(failed.value) == "InternalServerError HTTP 502"
    assert len(fake.seen) == 3


def test_a_request_that_times_out_fails_fast(fake: FakeOpenAI) -> None:
    fake.script.extend([Reply(HANG), Reply(HANG)])
    started = time.monotonic()
    with pytest.raises(EmbeddingFailed, match=r"^APITimeoutError$"):
        embedder(fake, timeout_s="0.2", max_retries="1").embed(TEXTS)
    assert len(fake.seen) == 2
    assert time.monotonic() - started < 10


def test_errors_never_carry_the_input_or_the_key(fake: FakeOpenAI) -> None:
    secret = "the customer's passport number is X1234567"
    fake.script.append(
        Reply(400, body={"error": {"message": f"bad input: {secret} {KEY}", "code": "bad_input"}})
    )
    with pytest.raises(EmbeddingFailed) as failed:
        embedder(fake, max_retries="0").embed([secret])
    assert str(failed.value) == "BadRequestError HTTP 400 bad_input"


@pytest.mark.parametrize("status", [401, 403, 404])
def test_a_refused_key_or_model_makes_the_embedder_unavailable(
    fake: FakeOpenAI, status: int
) -> None:
    fake.script.append(Reply(status, body={"error": {"message": "no"}}))
    with pytest.raises(EmbedderUnavailable, match=f"openai:text-embedding-3-small@256: .*{status}"):
        embedder(fake, max_retries="3").embed(TEXTS)
    assert len(fake.seen) == 1  # not retried


def test_vectors_of_another_width_are_refused(fake: FakeOpenAI) -> None:
    narrow = ModelIdentity.parse("openai:nomic-embed-text@768")
    with pytest.raises(EmbedderUnavailable, match=r"width \[384\].*width 768"):
        embedder(fake, narrow).embed(TEXTS)


def test_prices_default_to_openais_and_are_configurable(fake: FakeOpenAI) -> None:
    assert embedder(fake).usd_per_1k_tokens == pytest.approx(0.02 / 1000)
    assert embedder(fake, OWN).usd_per_1k_tokens == 0.0
    priced = embedder(fake, OWN, prices='{"nomic-embed-text": 0.5}')
    assert priced.usd_per_1k_tokens == pytest.approx(0.5 / 1000)
    assert embedder(fake, prices='{"nomic-embed-text": 0.5}').usd_per_1k_tokens == pytest.approx(
        0.02 / 1000
    )


def test_chunk_windows_are_capped_to_the_endpoints_input_limit(fake: FakeOpenAI) -> None:
    assert embedder(fake, max_input_tokens="512").max_tokens == 512


def test_without_a_key_the_provider_says_what_to_set(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    registry = Registry(providers=providers_for(Settings.from_env({})))
    with pytest.raises(EmbedderUnavailable, match="OPENAI_API_KEY"):
        registry.get(SMALL)
