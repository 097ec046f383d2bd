"""The `openai` provider: any OpenAI-compatible `/v1/embeddings` endpoint, through the
official SDK (its retries: exponential backoff with jitter, `Retry-After` honoured)."""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import openai

from config.settings import Settings
from data.model_identity import ModelIdentity
from indexer.billing import Embedding
from indexer.embedders import EmbedderUnavailable
from indexer.providers.failures import EmbeddingFailed

_CODE = re.compile(r"^[A-Za-z0-9_.-]{1,64}$")


@dataclass(frozen=True, slots=True)
class OpenAIOptions:
    base_url: str | None
    api_key: str | None
    usd_per_1m_tokens: Mapping[str, float]
    dimensions_models: frozenset[str]
    max_inputs: int
    max_request_tokens: int
    max_input_tokens: int
    timeout_s: float
    max_retries: int

    @classmethod
    def of(cls, settings: Settings) -> OpenAIOptions:
        key = settings.openai_api_key
        return cls(
            base_url=settings.openai_base_url,
            api_key=None if key is None else key.get_secret_value(),
            usd_per_1m_tokens=dict(settings.openai_prices),
            dimensions_models=frozenset(settings.openai_dimensions_models),
            max_inputs=settings.openai_max_inputs,
            max_request_tokens=settings.openai_max_request_tokens,
            max_input_tokens=settings.openai_max_input_tokens,
            timeout_s=settings.openai_timeout_s,
            max_retries=settings.openai_max_retries,
        )


class OpenAIEmbedder:
    """`openai:<model>@<dimensions>`: unit vectors of that width, billed by the answer's
    `usage`; a batch is split into requests that fit the endpoint's input limits."""

    def __init__(self, identity: ModelIdentity, options: OpenAIOptions) -> None:
        self.identity = identity
        self.options = options
        self.max_tokens: int | None = options.max_input_tokens
        self.usd_per_1k_tokens = options.usd_per_1m_tokens.get(identity.model, 0.0) / 1000.0
        try:
            self.client = openai.OpenAI(
                api_key=options.api_key,
                base_url=options.base_url,
                timeout=options.timeout_s,
                max_retries=options.max_retries,
            )
        except openai.OpenAIError:
            raise EmbedderUnavailable(
                f"{identity} needs OPENAI_API_KEY (any non-empty value for a server that checks "
                "none) and OPENAI_BASE_URL for an endpoint other than OpenAI's"
            ) from None

    def token_cost(self, word: str) -> int:
        """An estimate for sizing chunk windows: about four bytes a token."""
        return max(1, -(-len(word.encode()) // 4))

    def token_bound(self, text: str) -> int:
        """No tokenizer makes more tokens than bytes, plus its two special tokens."""
        return len(text.encode()) + 2

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        return self.embed_metered(texts).vectors

    def embed_metered(self, texts: Sequence[str]) -> Embedding:
        parts: list[np.ndarray] = [np.zeros((0, self.identity.dimensions), dtype=np.float32)]
        tokens = 0
        for request in self.requests(texts):
            vectors, used = self._embed(request)
            parts.append(vectors)
            tokens += used
        return Embedding(np.vstack(parts), tokens)

    def requests(self, texts: Sequence[str]) -> Iterator[list[str]]:
        """The texts in order, cut into requests of at most max_inputs texts and
        max_request_tokens tokens (by the bound); a text over that goes alone."""
        request: list[str] = []
        size = 0
        for text in texts:
            bound = self.token_bound(text)
            full = len(request) >= self.options.max_inputs
            if request and (full or size + bound > self.options.max_request_tokens):
                yield request
                request, size = [], 0
            request.append(text)
            size += bound
        if request:
            yield request

    def _embed(self, texts: list[str]) -> tuple[np.ndarray, int]:
        extra: dict[str, Any] = {}
        if self.identity.model in self.options.dimensions_models:
            extra["dimensions"] = self.identity.dimensions
        try:
            answer = self.client.embeddings.create(
                model=self.identity.model, input=texts, encoding_format="float", **extra
            )
        except (
            openai.AuthenticationError,
            openai.PermissionDeniedError,
            openai.NotFoundError,
        ) as e:
            # Nothing a retry of these chunks would change: the account's setting is wrong.
            raise EmbedderUnavailable(f"{self.identity}: {describe(e)}") from None
        except openai.OpenAIError as exc:
            raise EmbeddingFailed(describe(exc)) from None
        rows = sorted(answer.data, key=lambda row: row.index)
        widths = {len(row.embedding) for row in rows}
        if len(rows) != len(texts) or widths - {self.identity.dimensions}:
            raise EmbedderUnavailable(
                f"{self.identity}: the endpoint answered {len(rows)} vector(s) of width "
                f"{sorted(widths)} for {len(texts)} text(s) of width {self.identity.dimensions}"
            )
        vectors = np.asarray([row.embedding for row in rows], dtype=np.float32)
        norms = np.linalg.norm(vectors, axis=1, keepdims=True)
        vectors = np.divide(vectors, norms, out=np.zeros_like(vectors), where=norms > 0)
        usage = getattr(answer, "usage", None)
        billed = getattr(usage, "prompt_tokens", None)
        if not isinstance(billed, int):  # a server that reports no usage is charged the bound
            billed = sum(self.token_bound(t) for t in texts)
        return vectors, billed


def describe(exc: openai.OpenAIError) -> str:
    """The error by kind, HTTP status and the provider's error code: never its message,
    which may quote the input."""
    parts = [type(exc).__name__]
    if isinstance(exc, openai.APIStatusError):
        parts.append(f"HTTP {exc.status_code}")
    code = getattr(exc, "code", None)
    if isinstance(code, str) and _CODE.match(code):
        parts.append(code)
    return " ".join(parts)
