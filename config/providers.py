"""The settings of the `openai` embedding provider: its endpoint and key, prices, and the
limits of its requests."""

from __future__ import annotations

import json
from typing import Any

from pydantic import Field, SecretStr, field_validator
from pydantic_settings import BaseSettings

from config.fields import setting

# USD per 1M tokens of OpenAI's embedding models (their published prices).
OPENAI_PRICES = {
    "text-embedding-3-small": 0.02,
    "text-embedding-3-large": 0.13,
    "text-embedding-ada-002": 0.10,
}


class ProviderSettings(BaseSettings):
    openai_base_url: str | None = Field(
        None,
        validation_alias="OPENAI_BASE_URL",
        description="the OpenAI-compatible endpoint of the `openai` provider (OpenAI, Azure "
        "OpenAI, Ollama, vLLM, text-embeddings-inference, LiteLLM), up to `/v1`",
        json_schema_extra={"group": "providers", "shown_default": "https://api.openai.com/v1"},
    )
    openai_api_key: SecretStr | None = Field(
        None,
        validation_alias="OPENAI_API_KEY",
        description="its key (any non-empty value for a server that checks none); never logged",
        json_schema_extra={"group": "providers", "shown_default": "unset"},
    )
    openai_prices: dict[str, float] = setting(
        OPENAI_PRICES,
        "USD per 1M tokens by model; a JSON object given here is merged over the default. A "
        "model named nowhere costs 0 (a server of your own); tokens are the answer's `usage`",
        "providers",
    )
    openai_dimensions_models: tuple[str, ...] = setting(
        ("text-embedding-3-small", "text-embedding-3-large"),
        "models sent the `dimensions` request parameter (comma-separated); any other model must "
        "answer vectors of its identity's width as they come",
        "providers",
    )
    openai_max_inputs: int = setting(
        2048, "texts per request: a batch is split to fit", "providers", ge=1, le=100_000
    )
    openai_max_request_tokens: int = setting(
        300_000,
        "tokens per request (counted by an upper bound: UTF-8 bytes + 2 a text)",
        "providers",
        ge=1,
        le=100_000_000,
    )
    openai_max_input_tokens: int = setting(
        8191,
        "the longest text the model reads, in tokens: chunk windows are capped to it "
        "(text-embeddings-inference with a BERT model: 512)",
        "providers",
        ge=16,
        le=1_000_000,
    )
    openai_timeout_s: float = setting(
        60.0, "per request, before it counts as failed", "providers", gt=0, le=3600
    )
    openai_max_retries: int = setting(
        4,
        "retries of a request on 408, 409, 429, 5xx, timeouts and lost connections, with "
        "exponential backoff and jitter, honouring `Retry-After` up to 120 s (the SDK's)",
        "providers",
        ge=0,
        le=20,
    )

    @field_validator("openai_prices", mode="before")
    @classmethod
    def _merged_prices(cls, value: Any) -> Any:
        if isinstance(value, str):
            try:
                value = json.loads(value)
            except ValueError:
                raise ValueError('must be a JSON object such as {"model": 0.02}') from None
        if not isinstance(value, dict):
            return value
        return {**OPENAI_PRICES, **value}

    @field_validator("openai_prices")
    @classmethod
    def _non_negative(cls, value: dict[str, float]) -> dict[str, float]:
        negative = sorted(model for model, price in value.items() if price < 0)
        if negative:
            raise ValueError(f"prices cannot be negative ({', '.join(negative)})")
        return value

    @field_validator("openai_dimensions_models", mode="before")
    @classmethod
    def _comma_separated(cls, value: Any) -> Any:
        if isinstance(value, str):
            return tuple(part.strip() for part in value.split(",") if part.strip())
        return value
