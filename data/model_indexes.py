"""One partial HNSW index per model identity, created when the model first appears."""

from __future__ import annotations

import hashlib

from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncConnection

from data.model_identity import ModelIdentity

HNSW_M = 16
# pgvector's default of 64 leaves some of an account's topic clusters reachable only by
# chance (the 1M benchmark's worst probes); 200 makes that rare, for a longer build. Only
# indexes built from now on take it: see the README ("When the index cannot vouch").
HNSW_EF_CONSTRUCTION = 200


def index_name(identity: ModelIdentity) -> str:
    return "session_chunks_hnsw_" + hashlib.sha1(str(identity).encode()).hexdigest()[:12]  # noqa: S324


def comparable_predicate(identity: ModelIdentity, alias: str = "") -> str:
    """The WHERE clause of the model's partial index; a query must repeat it to use the index."""
    p = f"{alias}." if alias else ""
    return (
        f"{p}embedding_model = {identity.sql_literal()} "
        f"AND {p}redaction_state = 'clear' AND {p}embedding_state = 'embedded'"
    )


def vector_expression(identity: ModelIdentity, alias: str = "") -> str:
    p = f"{alias}." if alias else ""
    return f"({p}embedding::vector({identity.dimensions}))"


def hnsw_index_ddl(name: str, identity: ModelIdentity, predicate: str) -> str:
    """CREATE INDEX for a partial HNSW index on the column cast to the model's width; the
    per-model and per-account indexes share its shape and build parameters."""
    return (
        f"CREATE INDEX IF NOT EXISTS {name} ON session_chunks "
        f"USING hnsw ({vector_expression(identity)} vector_cosine_ops) "
        f"WITH (m = {HNSW_M}, ef_construction = {HNSW_EF_CONSTRUCTION}) "
        f"WHERE {predicate}"
    )


async def ensure_model_index(conn: AsyncConnection, identity: ModelIdentity) -> bool:
    """Register the identity and build its index if it is new; True when it was built."""
    name = index_name(identity)
    inserted = (
        await conn.execute(
            text(
                "INSERT INTO embedding_models (model_identity, dimensions, index_name) "
                "VALUES (:identity, :dims, :name) ON CONFLICT (model_identity) DO NOTHING "
                "RETURNING model_identity"
            ),
            {"identity": str(identity), "dims": identity.dimensions, "name": name},
        )
    ).scalar()
    if inserted is None:
        return False
    await conn.execute(text(hnsw_index_ddl(name, identity, comparable_predicate(identity))))
    return True
