"""The failure modes' exact pass, its reads: the vectors of a window's probes and of every
chunk their lookups may take (the pool), and pgvector's own distance of chosen pairs.

The pass (resolvers/comparison/window_pass.py) ranks every (probe, pool chunk) pair in
memory to find each probe's candidates, then asks PostgreSQL for the exact distances of
those candidates, so the similarities it answers are the ones similarSessions computes."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from uuid import UUID

import numpy as np
import sqlalchemy as sa
from sqlalchemy.ext.asyncio import AsyncConnection

from data.model_identity import ModelIdentity
from data.model_indexes import vector_expression

# pgvector's binary form of a vector: dimensions (int16), unused (int16), then big-endian
# float4s.
_HEADER_BYTES = 4


@dataclass(frozen=True, slots=True)
class PoolFilter:
    """What every lookup of the pass accepts: chunks from the window's start on, of sessions
    of these statuses and source types (None: any) that started before `started_before`."""

    cutoff: datetime | None
    statuses: tuple[str, ...] | None
    source_types: tuple[str, ...] | None
    started_before: datetime | None = None


@dataclass(frozen=True, slots=True)
class Vectors:
    """Chunks with their sessions and vectors (one row each, float32)."""

    ids: tuple[UUID, ...]
    sessions: tuple[UUID, ...]
    vectors: np.ndarray


def _unpack(blobs: Sequence[bytes], dimensions: int) -> np.ndarray:
    out = np.empty((len(blobs), dimensions), dtype=np.float32)
    for n, blob in enumerate(blobs):
        out[n] = np.frombuffer(blob, dtype=">f4", offset=_HEADER_BYTES, count=dimensions)
    return out


_ACCEPTED = (
    "JOIN runtime_sessions s ON s.account_id = c.account_id AND s.id = c.runtime_session_id "
    "WHERE c.account_id = :account_id AND c.redaction_state = 'clear' "
    "AND c.embedding_state = 'embedded' {model} "
    "AND (CAST(:cutoff AS timestamptz) IS NULL OR c.occurred_at >= :cutoff) "
    "AND (CAST(:statuses AS text[]) IS NULL OR s.status = ANY(:statuses)) "
    "AND (CAST(:source_types AS text[]) IS NULL OR s.source_type = ANY(:source_types)) "
    "AND (CAST(:started_before AS timestamptz) IS NULL OR s.started_at < :started_before)"
)


def _params(account_id: UUID, where: PoolFilter) -> dict[str, object]:
    return {
        "account_id": account_id,
        "cutoff": where.cutoff,
        "statuses": None if where.statuses is None else list(where.statuses),
        "source_types": None if where.source_types is None else list(where.source_types),
        "started_before": where.started_before,
    }


async def pool_size(conn: AsyncConnection, account_id: UUID, where: PoolFilter, cap: int) -> int:
    """The account's comparable chunks (of any model) the filter accepts, counted up to
    `cap` + 1."""
    accepted = _ACCEPTED.format(model="")
    statement = (
        f"SELECT count(*) FROM (SELECT 1 FROM session_chunks c {accepted} LIMIT :cap + 1) AS x"
    )
    params = {**_params(account_id, where), "cap": cap}
    return int((await conn.execute(sa.text(statement), params)).scalar_one())


async def pool_vectors(
    conn: AsyncConnection, account_id: UUID, identity: ModelIdentity, where: PoolFilter
) -> Vectors:
    """The account's comparable chunks of the model that the filter accepts, in id order."""
    vector = vector_expression(identity, "c")
    accepted = _ACCEPTED.format(model=f"AND c.embedding_model = {identity.sql_literal()}")
    statement = (
        f"SELECT c.id, c.runtime_session_id, vector_send({vector}) FROM session_chunks c "
        f"{accepted} ORDER BY c.id"
    )
    rows = (await conn.execute(sa.text(statement), _params(account_id, where))).all()
    return Vectors(
        tuple(r[0] for r in rows),
        tuple(r[1] for r in rows),
        _unpack([r[2] for r in rows], identity.dimensions),
    )


async def chunk_vectors(
    conn: AsyncConnection, account_id: UUID, identity: ModelIdentity, ids: Sequence[UUID]
) -> np.ndarray:
    """The vectors of these chunks of the model, in the order asked (zeros for one removed
    since the plan read it: a zero vector matches nothing)."""
    vector = vector_expression(identity, "c")
    rows = (
        await conn.execute(
            sa.text(
                f"SELECT c.id, vector_send({vector}) FROM session_chunks c "
                "WHERE c.account_id = :account_id AND c.id = ANY(CAST(:ids AS uuid[]))"
            ),
            {"account_id": account_id, "ids": list(ids)},
        )
    ).all()
    found = {r[0]: r[1] for r in rows}
    zero = bytes(_HEADER_BYTES + 4 * identity.dimensions)
    return _unpack([found.get(i, zero) for i in ids], identity.dimensions)


async def exact_distances(
    conn: AsyncConnection,
    account_id: UUID,
    identity: ModelIdentity,
    probes: Sequence[UUID],
    chunks: Sequence[UUID],
) -> list[float]:
    """pgvector's cosine distance of each (probe chunk, chunk) pair, in the order given: the
    exact comparison's own expression (NaN for a chunk removed since it was read)."""
    distance = f"({vector_expression(identity, 'c')} <=> {vector_expression(identity, 'p')})"
    # One row of one array: the driver decodes it natively, where as many rows as pairs
    # (a hundred thousand for a window of 500 sessions) would each become a Python row.
    statement = (
        f"SELECT array_agg({distance} ORDER BY x.n) "
        "FROM unnest(CAST(:probes AS uuid[]), CAST(:chunks AS uuid[])) WITH ORDINALITY "
        "AS x(probe, chunk, n) "
        "LEFT JOIN session_chunks p ON p.account_id = :account_id AND p.id = x.probe "
        "LEFT JOIN session_chunks c ON c.account_id = :account_id AND c.id = x.chunk"
    )
    params = {"account_id": account_id, "probes": list(probes), "chunks": list(chunks)}
    found = (await conn.execute(sa.text(statement), params)).scalar_one()
    return [math.nan if d is None else float(d) for d in found or ()]
