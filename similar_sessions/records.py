"""The import format: one JSON object a line, validated into typed records."""

from __future__ import annotations

from typing import Annotated, Literal
from uuid import UUID

from pydantic import (
    AwareDatetime,
    BaseModel,
    ConfigDict,
    Field,
    TypeAdapter,
    ValidationError,
    field_validator,
    model_validator,
)

from data.model_identity import InvalidModelIdentity, ModelIdentity
from data.tables import EMBEDDING_SCOPES, EMBEDDING_STATES, REDACTION_STATES, SOURCE_KINDS

Scope = Literal[EMBEDDING_SCOPES]  # type: ignore[valid-type]
SourceKind = Literal[SOURCE_KINDS]  # type: ignore[valid-type]
RedactionState = Literal[REDACTION_STATES]  # type: ignore[valid-type]
EmbeddingState = Literal[EMBEDDING_STATES]  # type: ignore[valid-type]
KNOWN_FEATURES = frozenset({"similarSessions"})
KNOWN_SCOPES = frozenset({"view_runtime_sessions"})


class _Record(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, strict=False)


class EmbeddingSettingRecord(_Record):
    enabled: bool
    provider: str = Field(min_length=1)
    model: str = Field(min_length=1)
    dimensions: int = Field(ge=1, le=16000)
    scope: Scope = "full"
    daily_cap_usd: float | None = Field(default=None, ge=0)

    @model_validator(mode="after")
    def _identity(self) -> EmbeddingSettingRecord:
        try:
            ModelIdentity.of(self.provider, self.model, self.dimensions)
        except InvalidModelIdentity as exc:
            raise ValueError(str(exc)) from None
        return self

    @property
    def identity(self) -> ModelIdentity:
        return ModelIdentity.of(self.provider, self.model, self.dimensions)


class ApiKeyRecord(_Record):
    key: str = Field(min_length=12, max_length=512)
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
    name: str = Field(min_length=1, max_length=200)
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
    title: str = Field(max_length=2000)
    source_type: str = Field(max_length=200)
    source_id: str = Field(max_length=500)
    reference: str = Field(max_length=2000)
    status: str = Field(min_length=1, max_length=50)
    started_at: AwareDatetime
    last_activity_at: AwareDatetime


class ActivityRecord(_Record):
    type: Literal["activity"]
    id: UUID
    runtime_session_id: UUID
    ordinal: int = Field(ge=0)
    occurred_at: AwareDatetime
    role: str = Field(min_length=1, max_length=50)
    kind: str = Field(min_length=1, max_length=50)
    content: str
    api_usage_id: UUID | None = None


class ChunkRecord(_Record):
    type: Literal["chunk"]
    id: UUID
    runtime_session_id: UUID
    source_kind: SourceKind
    source_id: UUID | None = None
    chunk_index: int = Field(ge=0)
    occurred_at: AwareDatetime
    role: str | None = None
    content: str
    redaction_state: RedactionState = "clear"
    embedding_state: EmbeddingState | None = None
    embedding_model: str | None = None
    embedding: list[float] | None = None
    embedded_at: AwareDatetime | None = None

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
        return self

    @property
    def identity(self) -> ModelIdentity:
        assert self.embedding_model is not None
        try:
            return ModelIdentity.parse(self.embedding_model)
        except InvalidModelIdentity as exc:
            raise ValueError(str(exc)) from None

    @staticmethod
    def stored_state(stated: str | None, embedding: list[float] | None) -> str:
        """The stored embedding_state: as stated, else embedded with a vector, else pending."""
        if stated is not None:
            return stated
        return "embedded" if embedding is not None else "pending"


Record = Annotated[
    AccountRecord | SessionRecord | ActivityRecord | ChunkRecord, Field(discriminator="type")
]
_RECORD = TypeAdapter(Record)


class LineError(ValueError):
    """A line of an import file that cannot be imported."""

    def __init__(self, path: str, line: int, reason: str) -> None:
        super().__init__(f"{path}:{line}: {reason}")
        self.path, self.line, self.reason = path, line, reason


def parse_line(text: str) -> AccountRecord | SessionRecord | ActivityRecord | ChunkRecord:
    """Validate one JSON line; raise ValueError with a reason that names the field."""
    try:
        return _RECORD.validate_json(text)
    except ValidationError as exc:
        raise ValueError(describe(exc)) from None


def describe(exc: ValidationError) -> str:
    """The first few errors, each as `field: reason`."""
    parts = []
    for error in exc.errors(include_url=False)[:3]:
        where = ".".join(str(p) for p in error["loc"])
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
