"""The vectors a chunk can hold: its account's configured model's (`PRIMARY`, the one every
comparison reads), its dense model's beside it (`DENSE`, a search's dense leg), and during a
lexical refit the staged fit's (`NEXT`, swapped into `PRIMARY` once complete). One passage,
several spaces: each slot has its own vector, model, state, attempts and error."""

from __future__ import annotations

from enum import Enum
from typing import NamedTuple
from uuid import UUID

from data.model_identity import ModelIdentity


class Columns(NamedTuple):
    """The columns of one slot."""

    vector: str
    model: str
    state: str
    embedded_at: str
    attempts: str
    error: str
    waiting: str  # what a chunk must be for the slot's model to embed it
    table: str = "session_chunks"  # the table the slot's columns are in
    key: str = "id"  # its column of the chunk's id


# The error of a chunk skipped because its text has no feature of the configured model (a
# script or words the account's lexical fit has not seen): its vector would have no
# direction. Unlike a chunk skipped as repeated, it is still searched by its words and
# embedded by the dense model.
NO_DIRECTION = "no feature of the model: its vector would have no direction"


def repeated(alias: str = "") -> str:
    """SQL: the chunk (of table alias `alias`) was skipped as repeated (boilerplate), which
    neither leg of a search reads."""
    c = f"{alias}." if alias else ""
    return f"({c}embedding_state = 'skipped' AND {c}embed_error IS DISTINCT FROM '{NO_DIRECTION}')"


class VectorSlot(Enum):
    # The configured model's: every comparison reads it.
    PRIMARY = Columns(
        "embedding",
        "embedding_model",
        "embedding_state",
        "embedded_at",
        "embed_attempts",
        "embed_error",
        "embedding_state = 'pending'",
    )
    # The dense model's: the same passages, less what the primary pass found repeated.
    DENSE = Columns(
        "dense_embedding",
        "dense_model",
        "dense_state",
        "dense_embedded_at",
        "dense_attempts",
        "dense_error",
        f"dense_state = 'pending' AND NOT {repeated()}",
    )
    # A staged lexical fit's, during a refit under `index --watch` (indexer/staged.py): the
    # same passages as the configured model's, in a table of their own (data/next_fits.py),
    # swapped into the configured model's slot once none waits.
    NEXT = Columns(
        "embedding",
        "model",
        "state",
        "embedded_at",
        "attempts",
        "error",
        "state = 'pending'",
        "session_chunk_next",
        "chunk_id",
    )

    def __getattr__(self, role: str) -> str:
        """A column of the slot by its role (`slot.vector`, `slot.state`: a field of
        Columns)."""
        if role not in Columns._fields:
            raise AttributeError(f"a vector slot has no column {role!r}")
        return str(getattr(object.__getattribute__(self, "value"), role))


class Space(NamedTuple):
    """A model's vector space as the chunks hold it: the model and the slot its vectors are
    in (the dense model's are in the dense slot)."""

    identity: ModelIdentity
    slot: VectorSlot = VectorSlot.PRIMARY


class ClaimedChunk(NamedTuple):
    """A chunk claimed to be embedded in a slot: its id, its text and its session."""

    id: UUID
    content: str
    session_id: UUID
