"""One partial HNSW index per model identity, created when the model first appears, over
the rows of the accounts without an index of their own (data/account_indexes.py).

Every HNSW index, shared or own, is of one kind (`IndexKind`), registered beside its name:
an index built now is `halfvec`, the vectors cast to half precision in the index's
expression (half the bytes a distance reads, half the index's pages); an index built before
migration 0015 is `vector`, full precision, and serves as it is until `similar-sessions
move-indexes` builds it again as `halfvec` (data/index_moves.py). A lookup orders by the
expression of the kind its index has and re-ranks what it fetched by the full-precision
distance, so the answers' similarities are the same on either kind."""

from __future__ import annotations

import hashlib
import time
from enum import StrEnum

from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncConnection

from data.engine import lift_statement_budget
from data.model_identity import ModelIdentity
from data.vector_slots import VectorSlot

HNSW_M = 16
# pgvector's default of 64 leaves some of an account's topic clusters reachable only by
# chance (the 1M benchmark's worst probes); 200 makes that rare, for a longer build. Only
# indexes built from now on take it: see docs/architecture.md ("When the index cannot vouch").
HNSW_EF_CONSTRUCTION = 200
HNSW_MAX_DIMENSIONS = 2000  # pgvector's limit for an HNSW index on the vector type
# The memory an HNSW build is given: enough for its graph to stay in memory (an on-disk
# build is several times slower), within a ceiling a shared server can afford.
GRAPH_BYTES_PER_DIMENSION = 4
GRAPH_BYTES_PER_ELEMENT = 8 + 2 * HNSW_M * 8 + 256
BUILD_MEMORY_CEILING = 4 * 1024**3


class IndexKind(StrEnum):
    """What an HNSW index holds of each vector: its type in pgvector, the cast of the index's
    expression and of the probe it is searched with."""

    VECTOR = "vector"  # 4 bytes a dimension: the indexes built before migration 0015
    HALFVEC = "halfvec"  # 2 bytes a dimension

    def expression(
        self, identity: ModelIdentity, alias: str = "", slot: VectorSlot = VectorSlot.PRIMARY
    ) -> str:
        """The slot's vector cast to the kind at the model's width: the index's expression,
        which a query's ORDER BY repeats to be served by it."""
        p = f"{alias}." if alias else ""
        return f"({p}{slot.vector}::{self.value}({identity.dimensions}))"

    def distance(self, identity: ModelIdentity, alias: str, probe: str) -> str:
        """The cosine distance the index orders by, to `probe` (a vector expression)."""
        cast = f"CAST({probe} AS {self.value}({identity.dimensions}))"
        return f"({self.expression(identity, alias)} <=> {cast})"


# The kind an index is built as from now on: measured against `vector` on the same clustered
# table (bench.latency.index_kinds), the same recall at 0.57x the size and half the p50.
BUILT_KIND = IndexKind.HALFVEC


def index_name(identity: ModelIdentity, kind: IndexKind = BUILT_KIND) -> str:
    """The shared index's name: a `vector` index keeps the name it was built under, so that
    the move to `halfvec` builds the new one beside it."""
    digest = hashlib.sha1(str(identity).encode()).hexdigest()[:12]  # noqa: S324
    return "session_chunks_hnsw_" + digest + ("" if kind is IndexKind.VECTOR else "_h")


def beside(name: str) -> str:
    """The name a shared index is built under beside one of its own kind and name, until it
    takes that name (data/index_moves.py)."""
    return name + "_n"


def comparable_predicate(
    identity: ModelIdentity, alias: str = "", slot: VectorSlot = VectorSlot.PRIMARY
) -> str:
    """The WHERE clause of the model's partial index (the chunks holding a clear vector of the
    model in the slot); a query must repeat it to use the index."""
    p = f"{alias}." if alias else ""
    return (
        f"{p}{slot.model} = {identity.sql_literal()} "
        f"AND {p}redaction_state = 'clear' AND {p}{slot.state} = 'embedded'"
    )


def not_a_repeat(alias: str = "", repeats: bool = False) -> str:
    """The conjunct every HNSW index's predicate ends with: no chunk that repeats another's
    vector (data/repeats.py) is in a graph. Empty with `repeats`: the rows an index's lookups
    answer with, its own and the repeats they stand for."""
    p = f"{alias}." if alias else ""
    return "" if repeats else f" AND {p}repeat_of IS NULL"


def shared_predicate(identity: ModelIdentity, alias: str = "", repeats: bool = False) -> str:
    """The WHERE clause of the model's shared index: its comparable rows, less those written
    while their account had its own index of the model (in_shared_index false) and the
    repeats (`not_a_repeat`)."""
    p = f"{alias}." if alias else ""
    return f"{comparable_predicate(identity, alias)} AND {p}in_shared_index" + not_a_repeat(
        alias, repeats
    )


def vector_expression(
    identity: ModelIdentity, alias: str = "", slot: VectorSlot = VectorSlot.PRIMARY
) -> str:
    """The slot's vector cast to the model's width, in full precision: what an exact
    distance reads, and what an approximate lookup's candidates are re-ranked by."""
    return IndexKind.VECTOR.expression(identity, alias, slot)


def hnsw_index_ddl(
    name: str,
    identity: ModelIdentity,
    predicate: str,
    concurrently: bool = False,
    kind: IndexKind = BUILT_KIND,
) -> str:
    """CREATE INDEX for a partial HNSW index of the kind on the column cast to the model's
    width; the per-model and per-account indexes share its shape and build parameters."""
    return (
        f"CREATE INDEX {'CONCURRENTLY ' if concurrently else ''}IF NOT EXISTS {name} "
        "ON session_chunks "
        f"USING hnsw ({kind.expression(identity)} {kind.value}_cosine_ops) "
        f"WITH (m = {HNSW_M}, ef_construction = {HNSW_EF_CONSTRUCTION}) "
        f"WHERE {predicate}"
    )


def build_memory(rows: int, dimensions: int) -> int:
    """The maintenance_work_mem (bytes) for an HNSW graph of rows vectors of dimensions."""
    per_element = GRAPH_BYTES_PER_DIMENSION * dimensions + GRAPH_BYTES_PER_ELEMENT
    return min(BUILD_MEMORY_CEILING, int(rows * per_element * 1.25))


async def prepare_build(
    conn: AsyncConnection, rows: int, dimensions: int, local: bool = True
) -> None:
    """Give an index build of the transaction its own budget: no statement timeout (a build
    is maintenance, not a request) and the memory its graph needs, never less than the
    server's setting. Both last until the transaction ends (set_config is_local); with
    `local` false, for the session (a concurrent build runs outside any transaction, and its
    caller resets them)."""
    await conn.execute(
        text(
            "SELECT set_config('statement_timeout', '0', :local), "
            "set_config('maintenance_work_mem', greatest("
            "pg_size_bytes(current_setting('maintenance_work_mem')), :memory) / 1024 || 'kB', "
            ":local)"
        ),
        {"memory": build_memory(rows, dimensions), "local": local},
    )


async def build_concurrently(
    conn: AsyncConnection, name: str, identity: ModelIdentity, predicate: str
) -> tuple[int, float]:
    """Build the index `name` as BUILT_KIND over the rows of `predicate`, concurrently (on a
    connection outside any transaction, whose memory setting the caller resets): (its chunks,
    the build's seconds)."""
    chunks = await comparable_count(conn, predicate)
    await prepare_build(conn, chunks, identity.dimensions, local=False)
    started = time.perf_counter()
    await conn.execute(text(hnsw_index_ddl(name, identity, predicate, concurrently=True)))
    return chunks, time.perf_counter() - started


async def comparable_count(conn: AsyncConnection, predicate: str) -> int:
    """How many chunks an index with this predicate holds (counted without the request
    budget: a build follows)."""
    await lift_statement_budget(conn)
    return int(
        (
            await conn.execute(text(f"SELECT count(*) FROM session_chunks WHERE {predicate}"))
        ).scalar_one()
    )


async def register_model(conn: AsyncConnection, identity: ModelIdentity) -> bool:
    """Register the identity with its index name; True when it is new (its index is to be
    built, by build_model_index)."""
    inserted = (
        await conn.execute(
            text(
                "INSERT INTO embedding_models (model_identity, dimensions, index_name, index_kind) "
                "VALUES (:identity, :dims, :name, :kind) ON CONFLICT (model_identity) DO NOTHING "
                "RETURNING model_identity"
            ),
            {
                "identity": str(identity),
                "dims": identity.dimensions,
                "name": index_name(identity),
                "kind": BUILT_KIND.value,
            },
        )
    ).scalar()
    return inserted is not None


async def build_model_index(conn: AsyncConnection, identity: ModelIdentity) -> None:
    """Build the identity's shared index over the rows already written, in one pass."""
    predicate = shared_predicate(identity)
    await prepare_build(conn, await comparable_count(conn, predicate), identity.dimensions)
    await conn.execute(text(hnsw_index_ddl(index_name(identity), identity, predicate)))


async def ensure_model_index(conn: AsyncConnection, identity: ModelIdentity) -> bool:
    """Register the identity and build its index if it is new; True when it was built."""
    if not await register_model(conn, identity):
        return False
    await build_model_index(conn, identity)
    return True
