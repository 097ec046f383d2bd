"""Writes of the import format (upserts by id, set-based from the staging table) and the
rows the export reads back."""

from __future__ import annotations

import hashlib
from collections.abc import AsyncIterator, Sequence
from typing import Any
from uuid import UUID

import sqlalchemy as sa
from sqlalchemy.dialects.postgresql import ARRAY, insert
from sqlalchemy.ext.asyncio import AsyncConnection

from data import tables as t
from data.accounts import hash_key
from data.engine import lift_statement_budget
from data.staging import OWNER, REPEATS, STAGE


def content_hash(content: str) -> bytes:
    return hashlib.sha256(" ".join(content.split()).lower().encode()).digest()


def _upsert(table: sa.Table, rows: Sequence[dict[str, Any]], keys: list[str]) -> sa.Insert:
    stmt = insert(table).values(list(rows))
    updatable = [c.name for c in table.columns if c.name not in keys and not c.computed]
    return stmt.on_conflict_do_update(
        index_elements=keys,
        set_={name: stmt.excluded[name] for name in updatable if name in rows[0]},
    )


async def upsert_rows(
    conn: AsyncConnection, table: sa.Table, rows: Sequence[dict[str, Any]], batch: int = 500
) -> None:
    keys = [c.name for c in table.primary_key.columns]
    if not rows:
        return
    for start in range(0, len(rows), batch):
        await conn.execute(_upsert(table, rows[start : start + batch], keys))


async def replace_features(conn: AsyncConnection, account_id: UUID, features: list[str]) -> None:
    await conn.execute(
        sa.delete(t.account_features).where(t.account_features.c.account_id == account_id)
    )
    if features:
        await conn.execute(
            insert(t.account_features).values(
                [{"account_id": account_id, "feature": f} for f in sorted(set(features))]
            )
        )


async def replace_embedding_setting(
    conn: AsyncConnection, account_id: UUID, setting: dict[str, Any] | None
) -> None:
    if setting is None:
        await conn.execute(
            sa.delete(t.embedding_settings).where(t.embedding_settings.c.account_id == account_id)
        )
        return
    await upsert_rows(conn, t.embedding_settings, [{"account_id": account_id, **setting}])


async def add_api_keys(
    conn: AsyncConnection, account_id: UUID, keys: list[tuple[str, list[str]]]
) -> None:
    if not keys:
        return
    rows = [{"account_id": account_id, "key_hash": hash_key(k), "scopes": s} for k, s in keys]
    stmt = insert(t.api_keys).values(rows)
    await conn.execute(
        stmt.on_conflict_do_update(
            index_elements=["account_id", "key_hash"], set_={"scopes": stmt.excluded.scopes}
        )
    )


async def key_owners(conn: AsyncConnection, keys: Sequence[str]) -> dict[bytes, UUID]:
    """key hash -> account_id for the keys that are already stored (one array parameter)."""
    if not keys:
        return {}
    hashes = sa.bindparam("hashes", [hash_key(k) for k in keys], type_=ARRAY(sa.LargeBinary))
    rows = await conn.execute(
        sa.select(t.api_keys.c.key_hash, t.api_keys.c.account_id).where(
            t.api_keys.c.key_hash == sa.any_(hashes)
        )
    )
    return {row[0]: row[1] for row in rows}


# target column -> expression over the staged line `s` (and its session's owner `o`)
_STAGED: dict[str, dict[str, str]] = {
    "session": {
        "account_id": "s.account_id",
        "id": "s.id",
        "title": "s.title",
        "source_type": "s.source_type",
        "source_id": "s.session_source_id",
        "reference": "s.reference",
        "status": "s.status",
        "started_at": "s.started_at",
        "last_activity_at": "s.last_activity_at",
    },
    "activity": {
        "account_id": "o.account_id",
        **{
            c: f"s.{c}"
            for c in ("id", "runtime_session_id", "ordinal", "occurred_at", "role", "kind")
        },
        "content": "s.content",
        "api_usage_id": "s.api_usage_id",
    },
    "chunk": {
        "account_id": "o.account_id",
        **{
            c: f"s.{c}"
            for c in (
                "id",
                "runtime_session_id",
                "source_kind",
                "source_id",
                "chunk_index",
                "occurred_at",
                "role",
                "content",
                "content_hash",
                "redaction_state",
                "embedding_state",
                "embedding_model",
            )
        },
        "embedding": "CAST(s.embedding AS vector)",
        "embedded_at": "s.embedded_at",
        "search_terms": "search_terms_of(s.searchable)",
    },
}
IMPORT_COLUMNS = {kind: tuple(columns) for kind, columns in _STAGED.items()}  # in order
# Whether a new staged chunk goes into its model's shared index: not when its account has an
# own index of the model registered (data/account_indexes.py), built or about to be.
_SHARED_FLAG = (
    "NOT EXISTS (SELECT 1 FROM account_model_indexes r "
    "WHERE r.account_id = o.account_id AND r.model_identity = s.embedding_model)"
)
_MARKS = {
    column: f"(SELECT r.{column} FROM {REPEATS} r WHERE r.id = s.id)"
    for column in ("representative", "repeats_until")
}
# The order new chunks are written in (their written_seq): the file's, which
# staging.stage_repeats took their representatives in.
_WRITTEN_ORDER = {"chunk": "ORDER BY s.line "}
_TARGET = {
    "session": t.runtime_sessions,
    "activity": t.runtime_session_activity,
    "chunk": t.session_chunks,
}


async def upsert_staged(conn: AsyncConnection, kind: str) -> int:
    """Upsert the staged lines of one kind (session, activity, chunk) in one statement; a row
    that would not change is left alone (no new row version, no index entry). Returns the
    rows inserted or changed."""
    table, columns = _TARGET[kind].name, _STAGED[kind]
    owner = "" if kind == "session" else f" JOIN {OWNER} o ON o.id = s.runtime_session_id"
    updated = [c for c in columns if c not in ("account_id", "id")]
    # a new chunk of an account with its own index of the chunk's model stays out of the
    # shared index; an updated row keeps its flag (neither compared nor set)
    # and a new chunk comes marked when it repeats a vector of its session (data/repeats.py;
    # an updated row's mark is left to data/repeats.mark_repeats after)
    chunk_only = {
        "in_shared_index": _SHARED_FLAG,
        "repeat_of": _MARKS["representative"],
        "repeats_until": _MARKS["repeats_until"],
    }
    written = {**columns, **(chunk_only if kind == "chunk" else {})}
    sql = (
        f"INSERT INTO {table} ({', '.join(written)}) "
        f"SELECT {', '.join(written.values())} FROM {STAGE} s{owner} WHERE s.type = '{kind}' "
        + _WRITTEN_ORDER.get(kind, "")
        + "ON CONFLICT (account_id, id) DO UPDATE SET "
        + ", ".join(f"{c} = EXCLUDED.{c}" for c in updated)
        + f" WHERE ({', '.join(f'{table}.{c}' for c in updated)}) IS DISTINCT FROM "
        f"({', '.join(f'EXCLUDED.{c}' for c in updated)})"
    )
    return (await conn.execute(sa.text(sql))).rowcount


# autovacuum's own rule for when a table's statistics are stale (its default
# autovacuum_analyze_threshold and autovacuum_analyze_scale_factor)
ANALYZE_THRESHOLD = 50
ANALYZE_SCALE_FACTOR = 0.1


async def stale_tables(conn: AsyncConnection, changed: dict[str, int]) -> list[str]:
    """The tables a file changed by as many rows as autovacuum waits for before it analyzes
    one (50 and a tenth of the rows the statistics last counted; a table never counted,
    always): their statistics are to be refreshed once the file commits (`analyze`)."""
    stale = []
    for kind, rows in changed.items():
        table = _TARGET[kind].name
        counted = (
            await conn.execute(
                sa.text("SELECT reltuples FROM pg_class WHERE oid = CAST(:t AS regclass)"),
                {"t": table},
            )
        ).scalar_one()
        if rows and (counted < 0 or rows >= ANALYZE_THRESHOLD + ANALYZE_SCALE_FACTOR * counted):
            stale.append(table)
    return stale


async def analyze(conn: AsyncConnection, tables: Sequence[str]) -> None:
    """ANALYZE the tables now rather than a minute later by autovacuum, so that an account's
    first comparisons, and the fit after an import, plan with statistics (issue #39: a
    25k-passage import's first lookups took 393 ms, 115 ms with them). SKIP_LOCKED: a table
    another ANALYZE or a concurrent index build holds is left to autovacuum, not waited for."""
    if tables:
        await lift_statement_budget(conn)
        await conn.execute(sa.text(f"ANALYZE (SKIP_LOCKED) {', '.join(tables)}"))


async def export_accounts(conn: AsyncConnection) -> list[tuple[Any, Any | None, list[str]]]:
    """Every account in id order: (account row, embedding setting row or None, features)."""
    features: dict[UUID, list[str]] = {}
    for row in await conn.execute(sa.select(t.account_features).order_by("account_id", "feature")):
        features.setdefault(row.account_id, []).append(row.feature)
    settings = {row.account_id: row for row in await conn.execute(sa.select(t.embedding_settings))}
    accounts = (await conn.execute(sa.select(t.accounts).order_by(t.accounts.c.account_id))).all()
    return [(a, settings.get(a.account_id), features.get(a.account_id, [])) for a in accounts]


_EXPORT_ORDER = {
    "session": ("started_at", "id"),
    "activity": ("runtime_session_id", "ordinal", "id"),
    "chunk": ("runtime_session_id", "occurred_at", "chunk_index", "id"),
}


async def export_rows(conn: AsyncConnection, account_id: UUID, kind: str) -> AsyncIterator[Any]:
    """The account's sessions, activity or chunks, streamed in a stable order."""
    table = _TARGET[kind]
    stream = await conn.stream(
        sa.select(table).where(table.c.account_id == account_id).order_by(*_EXPORT_ORDER[kind])
    )
    async for row in stream:
        yield row
