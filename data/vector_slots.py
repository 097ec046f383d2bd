"""The two vectors a chunk can hold: its account's configured model's (`PRIMARY`, the one
every comparison reads) and its dense model's beside it (`DENSE`, a search's dense leg). One
passage, two spaces: each slot has its own vector, model, state, attempts and error."""

from __future__ import annotations

from enum import Enum
from typing import NamedTuple

from data.model_identity import ModelIdentity


class VectorSlot(Enum):
    PRIMARY = "embedding"
    DENSE = "dense"

    @property
    def vector(self) -> str:
        return "embedding" if self is VectorSlot.PRIMARY else "dense_embedding"

    @property
    def model(self) -> str:
        return "embedding_model" if self is VectorSlot.PRIMARY else "dense_model"

    @property
    def state(self) -> str:
        return "embedding_state" if self is VectorSlot.PRIMARY else "dense_state"

    @property
    def embedded_at(self) -> str:
        return "embedded_at" if self is VectorSlot.PRIMARY else "dense_embedded_at"

    @property
    def attempts(self) -> str:
        return "embed_attempts" if self is VectorSlot.PRIMARY else "dense_attempts"

    @property
    def error(self) -> str:
        return "embed_error" if self is VectorSlot.PRIMARY else "dense_error"

    @property
    def waiting(self) -> str:
        """What a chunk must be for this slot's model to embed it: pending in the slot, and,
        for the dense slot, not content the primary pass found repeated (boilerplate)."""
        if self is VectorSlot.PRIMARY:
            return "embedding_state = 'pending'"
        return "dense_state = 'pending' AND embedding_state <> 'skipped'"


class Space(NamedTuple):
    """A model's vector space as the chunks hold it: the model and the slot its vectors are
    in (the dense model's are in the dense slot)."""

    identity: ModelIdentity
    slot: VectorSlot = VectorSlot.PRIMARY
