"""The comparison's SQL: a session's chunk inventory, the per-probe nearest chunks of every
probe in one statement, and the details of what matched."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime
from uuid import UUID

import sqlalchemy as sa
from sqlalchemy.dialects.postgresql import UUID as UUID_TYPE
from sqlalchemy.exc import DBAPIError
from sqlalchemy.ext.asyncio import AsyncConnection

from data import tables as t
from data.account_indexes import VALID_ACCOUNT_INDEX, account_predicate
from data.accounts import EmbeddingSetting, setting_of
from data.engine import is_query_canceled
from data.errors import ComparisonTimedOut
from data.model_identity import ModelIdentity
from data.model_indexes import comparable_predicate, vector_expression
from data.sessions import SessionRow


@dataclass(frozen=True, slots=True)
class Scan:
    """How one model's candidates are read: an exact pass over the account's chunks, or an
    HNSW index (the account's own when own_index, else the model's shared one)."""

    identity: ModelIdentity
    exact: bool
    own_index: bool = False


@dataclass(frozen=True, slots=True)
class Inventory:
    """What one session holds: embedded clear chunks by model (in probe order), and waiting ones."""

    embedded: dict[str, list[UUID]] = field(default_factory=dict)
    pending: int = 0


@dataclass(frozen=True, slots=True)
class ProbeSpec:
    key: int  # which comparison of the batch this probe belongs to
    probe: int  # its position among the probes (0-based)
    chunk_id: UUID
    session_id: UUID
    identity: ModelIdentity
    cutoff: datetime | None


@dataclass(frozen=True, slots=True)
class HitRow:
    key: int
    probe: int
    chunk_id: UUID
    session_id: UUID
    similarity: float


@dataclass(frozen=True, slots=True)
class ChunkDetail:
    id: UUID
    runtime_session_id: UUID
    source_kind: str
    source_id: UUID | None
    chunk_index: int
    occurred_at: datetime
    role: str | None
    redaction_state: str
    text: str | None
    replay_anchor: UUID | None  # the replay turn it came from, when source_id names one


async def sessions_and_setting(
    conn: AsyncConnection, account_id: UUID, session_ids: Sequence[UUID]
) -> tuple[dict[UUID, SessionRow], EmbeddingSetting | None]:
    """The asked sessions of the account and the account's embedding setting, in one
    statement (the comparison's first round trip)."""
    anchor = sa.select(sa.literal(account_id, UUID_TYPE).label("account_id")).subquery("anchor")
    e, s = t.embedding_settings, t.runtime_sessions
    query = (
        sa.select(
            e.c.enabled,
            e.c.provider,
            e.c.model,
            e.c.dimensions,
            e.c.scope,
            e.c.daily_cap_usd,
            *(s.c[name] for name in SessionRow.__slots__),
        )
        .select_from(anchor)
        .outerjoin(e, e.c.account_id == anchor.c.account_id)
        .outerjoin(
            s, sa.and_(s.c.account_id == anchor.c.account_id, s.c.id.in_(list(set(session_ids))))
        )
    )
    rows = (await conn.execute(query)).all()
    setting = setting_of(rows[0]) if rows[0].enabled is not None else None
    sessions = {
        row.id: SessionRow(*(row._mapping[name] for name in SessionRow.__slots__))
        for row in rows
        if row.id is not None
    }
    return sessions, setting


@contextmanager
def within_budget() -> Iterator[None]:
    """Statements cancelled by the comparison's time budget raise ComparisonTimedOut (their
    transaction is then aborted)."""
    try:
        yield
    except DBAPIError as exc:
        if is_query_canceled(exc):
            raise ComparisonTimedOut from None
        raise


async def configure_comparison(conn: AsyncConnection, *, timeout_ms: int, ef_search: int) -> None:
    """Set the comparison's settings until its transaction ends, in one round trip: its time
    budget, iterative HNSW scans, and custom plans (a generic plan of a prepared statement
    cannot prove a partial index's predicate). On Citus these become SET LOCAL statements
    (docs/scaling.md)."""
    await conn.execute(
        sa.text(
            "SELECT set_config('statement_timeout', :timeout, true), "
            "set_config('hnsw.iterative_scan', 'relaxed_order', true), "
            "set_config('hnsw.ef_search', :ef, true), "
            "set_config('plan_cache_mode', 'force_custom_plan', true)"
        ),
        {"timeout": str(int(timeout_ms)), "ef": str(int(ef_search))},
    )


async def widen_search(conn: AsyncConnection, ef_search: int) -> None:
    """Raise hnsw.ef_search for the rest of the transaction (a retry of short probes)."""
    await conn.execute(
        sa.text("SELECT set_config('hnsw.ef_search', :ef, true)"), {"ef": str(int(ef_search))}
    )


async def inventories(
    conn: AsyncConnection, account_id: UUID, session_ids: Sequence[UUID], summaries_only: bool
) -> dict[UUID, Inventory]:
    """Embedded clear chunks ordered (occurred_at, chunk_index, id), and waiting chunks in scope."""
    rows = await conn.execute(
        sa.text(
            "SELECT runtime_session_id, id, embedding_model, embedding_state, source_kind "
            "FROM session_chunks "
            "WHERE account_id = :account_id AND runtime_session_id = ANY(:ids) "
            "AND redaction_state = 'clear' "
            "AND embedding_state IN ('embedded', 'pending', 'in_progress') "
            "ORDER BY runtime_session_id, occurred_at, chunk_index, id"
        ),
        {"account_id": account_id, "ids": list(set(session_ids))},
    )
    result: dict[UUID, Inventory] = {sid: Inventory() for sid in session_ids}
    pending: dict[UUID, int] = {}
    for session_id, chunk_id, model, state, kind in rows:
        if state == "embedded":
            result[session_id].embedded.setdefault(model, []).append(chunk_id)
        elif not summaries_only or kind == "session_summary":
            pending[session_id] = pending.get(session_id, 0) + 1
    return {sid: Inventory(inv.embedded, pending.get(sid, 0)) for sid, inv in result.items()}


async def lookup_facts(
    conn: AsyncConnection, account_id: UUID, identity: ModelIdentity, cap: int
) -> tuple[bool, int]:
    """(the account has a valid index of its own for the model, its comparable chunks
    counted up to cap + 1), in one statement."""
    row = (
        await conn.execute(
            sa.text(
                f"SELECT EXISTS ({VALID_ACCOUNT_INDEX}), "
                "(SELECT count(*) FROM (SELECT 1 FROM session_chunks "
                f"WHERE account_id = :account_id AND {comparable_predicate(identity)} "
                "LIMIT :cap) AS bounded)"
            ),
            {"account_id": account_id, "identity": str(identity), "cap": cap + 1},
        )
    ).one()
    return bool(row[0]), int(row[1])


# A zero vector's cosine distance is NaN, and NaN compares above every number in
# PostgreSQL (`1 - NaN >= 0.35` is true): such a distance is never a hit.
def _finite_and_close(distance: str) -> str:
    return f"{distance} <> 'NaN'::float8 AND 1 - {distance} >= :floor"


def _probe_cte(name: str, identity: ModelIdentity, n: int) -> str:
    return (
        f"{name} AS MATERIALIZED (SELECT p.key, p.probe, p.session_id, p.cutoff, "
        f"{vector_expression(identity, 'c')} AS v "
        f"FROM unnest(CAST(:keys_{n} AS int[]), CAST(:probes_{n} AS int[]), "
        f"CAST(:chunk_ids_{n} AS uuid[]), CAST(:session_ids_{n} AS uuid[]), "
        f"CAST(:cutoffs_{n} AS timestamptz[])) AS p(key, probe, chunk_id, session_id, cutoff) "
        f"JOIN session_chunks c ON c.account_id = :account_id AND c.id = p.chunk_id)"
    )


def _candidate_filter(identity: ModelIdentity, own_index_of: UUID | None = None) -> str:
    """Candidates of a probe; with own_index_of, the account's index predicate verbatim."""
    scope = (
        f"c.account_id = :account_id AND {comparable_predicate(identity, 'c')}"
        if own_index_of is None
        else account_predicate(own_index_of, identity, "c")
    )
    return (
        f"{scope} AND c.runtime_session_id <> p.session_id "
        "AND (p.cutoff IS NULL OR c.occurred_at >= p.cutoff)"
    )


def _exact_branch(name: str, identity: ModelIdentity) -> str:
    # OFFSET 0 keeps the scored rows narrow (ids and one distance each): without it the
    # planner carries every chunk's vector into the window's sort, which spills to disk.
    distance = f"({vector_expression(identity, 'c')} <=> p.v)"
    return (
        "SELECT key, probe, chunk_id, session_id, 1 - distance AS similarity FROM ("
        "SELECT key, probe, chunk_id, session_id, distance, row_number() OVER "
        "(PARTITION BY key, probe ORDER BY distance, chunk_id) AS rank FROM ("
        f"SELECT p.key, p.probe, c.id AS chunk_id, c.runtime_session_id AS session_id, "
        f"{distance} AS distance "
        f"FROM {name} p JOIN session_chunks c ON {_candidate_filter(identity)} OFFSET 0"
        f") AS scored WHERE {_finite_and_close('distance')}) AS ranked WHERE rank <= :per_probe"
    )


def _index_branch(name: str, identity: ModelIdentity, own_index_of: UUID | None = None) -> str:
    distance = f"({vector_expression(identity, 'c')} <=> p.v)"
    return (
        "SELECT p.key, p.probe, n.chunk_id, n.session_id, 1 - n.distance AS similarity "
        f"FROM {name} p CROSS JOIN LATERAL ("
        "SELECT chunk_id, session_id, distance FROM ("
        f"SELECT c.id AS chunk_id, c.runtime_session_id AS session_id, {distance} AS distance "
        f"FROM session_chunks c WHERE {_candidate_filter(identity, own_index_of)} "
        f"ORDER BY {distance} LIMIT :overfetch) AS approximate "
        "ORDER BY distance, chunk_id LIMIT :per_probe) AS n "
        f"WHERE {_finite_and_close('n.distance')}"
    )


def nearest_chunks_sql(scans: Sequence[Scan], account_id: UUID | None = None) -> str:
    """One statement for every probe: a branch per model, joined by UNION ALL. A branch on
    the account's own index inlines account_id, so the statement text is per account."""
    ctes, branches = [], []
    for n, scan in enumerate(scans):
        name = f"probe_{n}"
        ctes.append(_probe_cte(name, scan.identity, n))
        if scan.exact:
            branches.append(_exact_branch(name, scan.identity))
        elif not scan.own_index:
            branches.append(_index_branch(name, scan.identity))
        else:
            if account_id is None:
                raise ValueError("a scan of the account's own index needs the account id")
            branches.append(_index_branch(name, scan.identity, account_id))
    return "WITH " + ", ".join(ctes) + " " + " UNION ALL ".join(branches)


async def nearest_chunks(
    conn: AsyncConnection,
    account_id: UUID,
    probes: Sequence[ProbeSpec],
    scans: dict[ModelIdentity, Scan],
    *,
    per_probe: int,
    floor: float,
    overfetch: int,
) -> list[HitRow]:
    """The per_probe nearest candidates of every probe above the floor, ties on chunk id.
    Run it after configure_comparison() in the same transaction, inside within_budget()."""
    if not probes:
        return []
    identities = sorted({p.identity for p in probes}, key=str)
    params: dict[str, object] = {
        "account_id": account_id,
        "per_probe": per_probe,
        "floor": floor,
        "overfetch": max(overfetch, per_probe),
    }
    for n, identity in enumerate(identities):
        mine = [p for p in probes if p.identity == identity]
        params[f"keys_{n}"] = [p.key for p in mine]
        params[f"probes_{n}"] = [p.probe for p in mine]
        params[f"chunk_ids_{n}"] = [p.chunk_id for p in mine]
        params[f"session_ids_{n}"] = [p.session_id for p in mine]
        params[f"cutoffs_{n}"] = [p.cutoff for p in mine]
    statement = sa.text(nearest_chunks_sql([scans[i] for i in identities], account_id))
    rows = await conn.execute(statement, params)
    return [HitRow(*row) for row in rows]


async def comparable_elsewhere(
    conn: AsyncConnection,
    account_id: UUID,
    asks: Sequence[tuple[int, UUID, ModelIdentity, datetime | None]],
) -> set[int]:
    """The keys whose account has another session with a comparable chunk of the model."""
    if not asks:
        return set()
    branches: list[str] = []
    params: dict[str, object] = {"account_id": account_id}
    for n, (key, session_id, identity, cutoff) in enumerate(asks):
        branches.append(
            f"SELECT {int(key)} AS key WHERE EXISTS (SELECT 1 FROM session_chunks c "
            f"WHERE c.account_id = :account_id AND {comparable_predicate(identity, 'c')} "
            f"AND c.runtime_session_id <> :session_{n} "
            f"AND (CAST(:cutoff_{n} AS timestamptz) IS NULL OR c.occurred_at >= :cutoff_{n}))"
        )
        params[f"session_{n}"] = session_id
        params[f"cutoff_{n}"] = cutoff
    rows = await conn.execute(sa.text(" UNION ALL ".join(branches)), params)
    return {row[0] for row in rows}


async def chunk_details(
    conn: AsyncConnection,
    account_id: UUID,
    chunk_ids: Sequence[UUID],
    text_ids: Sequence[UUID],
    preview_chars: int,
) -> dict[UUID, ChunkDetail]:
    """Metadata of the chunks (with the replay turn each came from, when its source_id is an
    activity of its session), and a preview of the content of those in text_ids. With no
    text_ids the statement does not name the content column at all."""
    ids = sorted(set(chunk_ids) | set(text_ids))
    if not ids:
        return {}
    params: dict[str, object] = {"account_id": account_id, "ids": ids}
    text_column = "NULL::text"
    if text_ids:
        limit = int(preview_chars)
        text_column = (
            "CASE WHEN NOT c.id = ANY(:text_ids) THEN NULL "
            f"WHEN char_length(c.content) > {limit} THEN left(c.content, {limit - 1}) || '…' "
            "ELSE c.content END"
        )
        params["text_ids"] = sorted(set(text_ids))
    rows = await conn.execute(
        sa.text(
            "SELECT c.id, c.runtime_session_id, c.source_kind, c.source_id, c.chunk_index, "
            f"c.occurred_at, c.role, c.redaction_state, {text_column}, a.id "
            "FROM session_chunks c LEFT JOIN runtime_session_activity a "
            "ON a.account_id = c.account_id AND a.id = c.source_id "
            "AND a.runtime_session_id = c.runtime_session_id "
            "WHERE c.account_id = :account_id AND c.id = ANY(:ids)"
        ),
        params,
    )
    return {row[0]: ChunkDetail(*row) for row in rows}
