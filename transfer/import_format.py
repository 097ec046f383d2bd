"""The import format: one JSON object a line, validated into typed records that PostgreSQL
and pgvector can hold (transfer/values.py)."""

from __future__ import annotations

import re
from typing import Annotated, Literal
from uuid import UUID

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    PrivateAttr,
    StrictFloat,
    TypeAdapter,
    ValidationError,
    field_validator,
    model_validator,
)

from data.accounts import SECRETS_SHOWN
from data.model_identity import InvalidModelIdentity, ModelIdentity
from data.model_indexes import HNSW_MAX_DIMENSIONS
from data.tables import EMBEDDING_SCOPES, EMBEDDING_STATES, REDACTION_STATES, SOURCE_KINDS
from transfer.values import Int4, Text, Time, TurnText, vector_problem

Scope = Literal[EMBEDDING_SCOPES]  # type: ignore[valid-type]
SourceKind = Literal[SOURCE_KINDS]  # type: ignore[valid-type]
RedactionState = Literal[REDACTION_STATES]  # type: ignore[valid-type]
EmbeddingState = Literal[EMBEDDING_STATES]  # type: ignore[valid-type]
KNOWN_FEATURES = frozenset({"similarSessions", SECRETS_SHOWN})
KNOWN_SCOPES = frozenset({"view_runtime_sessions", "ingest_runtime_sessions", "manage_alerts"})


MAX_DAILY_CAP_USD = 99_999_999  # embedding_settings.daily_cap_usd is numeric(12, 4)


class _Record(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, strict=False, allow_inf_nan=False)


def indexable(identity: ModelIdentity) -> ModelIdentity:
    """The identity, if pgvector can index vectors of its width; else a ValueError."""
    if identity.dimensions > HNSW_MAX_DIMENSIONS:
        raise ValueError(
            f"model {identity} has {identity.dimensions} dimensions; "
            f"pgvector's HNSW index holds at most {HNSW_MAX_DIMENSIONS}"
        )
    return identity


def parse_identity(text: str) -> ModelIdentity:
    try:
        return indexable(ModelIdentity.parse(text))
    except InvalidModelIdentity as exc:
        raise ValueError(str(exc)) from None


class ModelRecord(_Record):
    """A model identity's parts: `<provider>:<model>@<dimensions>`, one pgvector can index."""

    provider: Text = Field(min_length=1)
    model: Text = Field(min_length=1)
    dimensions: int = Field(ge=1)

    @model_validator(mode="after")
    def _identity(self) -> ModelRecord:
        parse_identity(f"{self.provider}:{self.model}@{self.dimensions}")
        return self

    @property
    def identity(self) -> ModelIdentity:
        return ModelIdentity.of(self.provider, self.model, self.dimensions)


class EmbeddingSettingRecord(ModelRecord):
    """The account's configured model, and, as `dense`, the dense model beside it: the same
    passages embedded by that model too, for a search's dense leg."""

    enabled: bool
    scope: Scope = "full"
    daily_cap_usd: float | None = Field(default=None, ge=0, le=MAX_DAILY_CAP_USD)
    dense: ModelRecord | None = None

    @model_validator(mode="after")
    def _another_dense_model(self) -> EmbeddingSettingRecord:
        if self.dense is not None and self.dense.identity == self.identity:
            raise ValueError("dense: names the configured model itself")
        return self

    def row(self) -> dict[str, object]:
        """The setting as the columns of its embedding_settings row."""
        dense = self.dense
        return {
            **self.model_dump(exclude={"dense"}),
            "dense_provider": None if dense is None else dense.provider,
            "dense_model": None if dense is None else dense.model,
            "dense_dimensions": None if dense is None else dense.dimensions,
        }


class ApiKeyRecord(_Record):
    key: Text = Field(min_length=12, max_length=512)
    scopes: list[str]

    @field_validator("scopes")
    @classmethod
    def _known_scopes(cls, scopes: list[str]) -> list[str]:
        unknown = sorted(set(scopes) - KNOWN_SCOPES)
        if unknown:
            raise ValueError(f"unknown scope(s) {unknown}; known: {sorted(KNOWN_SCOPES)}")
        return scopes


class AccountRecord(_Record):
    type: Literal["account"]
    id: UUID
    name: Text = Field(min_length=1, max_length=200)
    embedding: EmbeddingSettingRecord | None = None
    features: list[str] = Field(default_factory=list)
    api_keys: list[ApiKeyRecord] = Field(default_factory=list)

    @field_validator("features")
    @classmethod
    def _known_features(cls, features: list[str]) -> list[str]:
        unknown = sorted(set(features) - KNOWN_FEATURES)
        if unknown:
            raise ValueError(f"unknown feature(s) {unknown}; known: {sorted(KNOWN_FEATURES)}")
        return features


class SessionRecord(_Record):
    type: Literal["session"]
    id: UUID
    account_id: UUID
    title: Text = Field(max_length=2000)
    source_type: Text = Field(max_length=200)
    source_id: Text = Field(max_length=500)
    reference: Text = Field(max_length=2000)
    status: Text = Field(min_length=1, max_length=50)
    started_at: Time
    last_activity_at: Time


class ActivityRecord(_Record):
    type: Literal["activity"]
    id: UUID
    runtime_session_id: UUID
    ordinal: Int4
    occurred_at: Time
    role: Text = Field(min_length=1, max_length=50)
    kind: Text = Field(min_length=1, max_length=50)
    content: TurnText
    api_usage_id: UUID | None = None


class ChunkRecord(_Record):
    type: Literal["chunk"]
    id: UUID
    runtime_session_id: UUID
    source_kind: SourceKind
    source_id: UUID | None = None
    chunk_index: Int4
    occurred_at: Time
    role: Text | None = Field(default=None, max_length=50)
    content: TurnText
    redaction_state: RedactionState = "clear"
    embedding_state: EmbeddingState | None = None
    embedding_model: str | None = None
    embedding: list[StrictFloat] | None = None  # JSON numbers only, as pgvector reads them
    embedded_at: Time | None = None
    _embedding_text: str | None = PrivateAttr(default=None)

    @model_validator(mode="after")
    def _vector_fits_model(self) -> ChunkRecord:
        if self.embedding is None:
            if self.embedding_state == "embedded":
                raise ValueError("embedding_state is 'embedded' but the chunk has no embedding")
            if self.embedding_model is not None:
                self.identity  # noqa: B018 - validates the identity's form
            return self
        if self.embedding_model is None:
            raise ValueError("a chunk with an embedding needs its embedding_model")
        identity = self.identity
        if len(self.embedding) != identity.dimensions:
            raise ValueError(
                f"embedding has {len(self.embedding)} dimensions, "
                f"model {identity} needs {identity.dimensions}"
            )
        problem = vector_problem(self.embedding)
        if problem is not None:
            raise ValueError(problem)
        return self

    @property
    def identity(self) -> ModelIdentity:
        assert self.embedding_model is not None
        return parse_identity(self.embedding_model)

    def keep_embedding_text(self, line: bytes) -> None:
        """Keep the line's own text of the embedding array (pgvector reads JSON's numbers
        as they are) when the line has exactly one: formatting floats costs more than the
        rest of the line."""
        if self.embedding is not None:
            found = _EMBEDDING_TEXT.findall(line)
            if len(found) == 1:
                self._embedding_text = found[0].decode()

    @property
    def embedding_text(self) -> str | None:
        """The embedding in pgvector's text form."""
        if self.embedding is None:
            return None
        return self._embedding_text or "[" + ",".join(map(repr, self.embedding)) + "]"

    @staticmethod
    def stored_state(stated: str | None, embedding: list[float] | None) -> str:
        """The stored embedding_state: as stated, else embedded with a vector, else pending."""
        if stated is not None:
            return stated
        return "embedded" if embedding is not None else "pending"


# A key "embedding" can only be the chunk's own: a JSON string cannot hold an unescaped quote
# and a chunk line has no nested objects. Only an array of plain numbers is kept.
_EMBEDDING_TEXT = re.compile(rb'"embedding"\s*:\s*(\[[-+0-9.eE,\s]*\])')

Record = Annotated[
    AccountRecord | SessionRecord | ActivityRecord | ChunkRecord, Field(discriminator="type")
]
_RECORD = TypeAdapter(Record)
_TAGS = [("account",), ("session",), ("activity",), ("chunk",)]  # the union's own loc


def parse_line(text: str | bytes) -> AccountRecord | SessionRecord | ActivityRecord | ChunkRecord:
    """Validate one JSON line; raise ValueError with a reason that names the field."""
    try:
        return _RECORD.validate_json(text)
    except ValidationError as exc:
        raise ValueError(describe(exc)) from None


def describe(exc: ValidationError) -> str:
    """The first few errors, each as `field: reason`."""
    parts = []
    for error in exc.errors(include_url=False)[:3]:
        loc = error["loc"][1:] if error["loc"][:1] in _TAGS else error["loc"]
        where = ".".join(str(p) for p in loc)
        message = error["msg"].removeprefix("Value error, ")
        if error["type"] == "union_tag_invalid":
            where, message = (
                "type",
                f"unknown type {error['ctx']['tag']}; expected account, session, activity or chunk",
            )
        elif error["type"] == "union_tag_not_found":
            where, message = "type", "every line needs a 'type'"
        elif error["type"] == "json_invalid":
            where, message = "", f"malformed JSON ({error.get('ctx', {}).get('error', '')})"
        parts.append(f"{where}: {message}" if where else message)
    return "; ".join(parts)
