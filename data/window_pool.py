"""The failure modes' exact pass, its reads: the vectors of a window's probes and of every
chunk their lookups may take (the pool), and pgvector's own distance of chosen pairs.

The pass (resolvers/comparison/window_pass.py) ranks every (probe, pool chunk) pair in
memory to find each probe's candidates, then asks PostgreSQL for the exact distances of
those candidates, so the similarities it answers are the ones similarSessions computes."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from uuid import UUID

import numpy as np
import sqlalchemy as sa
from sqlalchemy.ext.asyncio import AsyncConnection

from data.exact_lookup import PARAMETERS, in_window, session_accepted
from data.model_identity import ModelIdentity
from data.model_indexes import comparable_predicate, vector_expression

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


# The chunks `c` a lookup of the pass may take: `{comparable}` (of one model, or of any), and
# the filter's window, statuses, source types and start, as the comparison's candidates are.
_ACCEPTED = (
    "JOIN runtime_sessions s ON s.account_id = c.account_id AND s.id = c.runtime_session_id "
    "WHERE c.account_id = :account_id AND {comparable} "
    f"AND {in_window(PARAMETERS)} AND {session_accepted(PARAMETERS)}"
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
    accepted = _ACCEPTED.format(
        comparable="c.redaction_state = 'clear' AND c.embedding_state = 'embedded'"
    )
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
    accepted = _ACCEPTED.format(comparable=comparable_predicate(identity, "c"))
    # One row: the ids and sessions as arrays, the vectors as one bytea, all decoded by the
    # driver natively (thousands of rows would each become a Python row on the event loop).
    statement = (
        "SELECT array_agg(c.id ORDER BY c.id), array_agg(c.runtime_session_id ORDER BY c.id), "
        f"string_agg(vector_send({vector}), ''::bytea ORDER BY c.id) FROM session_chunks c "
        f"{accepted}"
    )
    ids, sessions, blob = (await conn.execute(sa.text(statement), _params(account_id, where))).one()
    vectors = await asyncio.to_thread(_concatenated, blob or b"", identity.dimensions)
    return Vectors(tuple(ids or ()), tuple(sessions or ()), vectors)


def _concatenated(blob: bytes, dimensions: int) -> np.ndarray:
    """Vectors sent back to back (each with its header) as one float32 matrix."""
    width = _HEADER_BYTES + 4 * dimensions
    rows = np.frombuffer(blob, dtype=np.uint8).reshape(-1, width)[:, _HEADER_BYTES:]
    return rows.copy().view(">f4").astype(np.float32)


async def chunk_vectors(
    conn: AsyncConnection, account_id: UUID, identity: ModelIdentity, ids: Sequence[UUID]
) -> np.ndarray:
    """The vectors of these chunks of the model, in the order asked (zeros for one removed
    since the plan read it: a zero vector matches nothing)."""
    vector = vector_expression(identity, "c")
    # One row, the vectors back to back in the order asked, as the pool's are read.
    statement = (
        f"SELECT string_agg(coalesce(vector_send({vector}), :zero), ''::bytea ORDER BY x.n) "
        "FROM unnest(CAST(:ids AS uuid[])) WITH ORDINALITY AS x(id, n) "
        "LEFT JOIN session_chunks c ON c.account_id = :account_id AND c.id = x.id"
    )
    zero = bytes(_HEADER_BYTES + 4 * identity.dimensions)
    params = {"account_id": account_id, "ids": list(ids), "zero": zero}
    blob = (await conn.execute(sa.text(statement), params)).scalar_one()
    return await asyncio.to_thread(_concatenated, blob or b"", identity.dimensions)


async def exact_distances(
    conn: AsyncConnection,
    account_id: UUID,
    identity: ModelIdentity,
    ids: Sequence[UUID],
    pairs: Sequence[tuple[int, int]],
) -> list[float | None]:
    """pgvector's cosine distance of each pair (places in `ids`: the probe's chunk, then the
    other chunk), in the order given: the exact comparison's own expression (None for a
    chunk removed since it was read). The pairs travel as two integer arrays, the chunks
    once."""
    distance = f"({vector_expression(identity, 'c')} <=> {vector_expression(identity, 'p')})"
    # One row of one array: the driver decodes it natively, where as many rows as pairs
    # (a hundred thousand for a window of 500 sessions) would each become a Python row.
    statement = (
        f"SELECT array_agg({distance} ORDER BY x.n) "
        "FROM unnest(CAST(CAST(:probes AS text) AS int[]), "
        "CAST(CAST(:chunks AS text) AS int[])) WITH ORDINALITY "
        "AS x(probe, chunk, n) "
        "LEFT JOIN session_chunks p ON p.account_id = :account_id "
        "AND p.id = (CAST(:ids AS uuid[]))[x.probe] "
        "LEFT JOIN session_chunks c ON c.account_id = :account_id "
        "AND c.id = (CAST(:ids AS uuid[]))[x.chunk]"
    )
    probes, chunks = await asyncio.to_thread(_int_arrays, pairs)
    params = {"account_id": account_id, "ids": list(ids), "probes": probes, "chunks": chunks}
    found = (await conn.execute(sa.text(statement), params)).scalar_one()
    return list(found or ())


def _int_arrays(pairs: Sequence[tuple[int, int]]) -> tuple[str, str]:
    """Both places of every pair as PostgreSQL array literals, counted from 1: one text
    each, where a list would be encoded element by element on the event loop."""
    probes = ",".join(str(p + 1) for p, _ in pairs)
    chunks = ",".join(str(c + 1) for _, c in pairs)
    return "{" + probes + "}", "{" + chunks + "}"
