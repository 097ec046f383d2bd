"""Writes of the import format (upserts by id) and the export read back."""

from __future__ import annotations

import hashlib
from collections.abc import AsyncIterator, Sequence
from typing import Any
from uuid import UUID

import sqlalchemy as sa
from sqlalchemy.dialects.postgresql import insert
from sqlalchemy.ext.asyncio import AsyncConnection

from data import tables as t
from data.model_identity import ModelIdentity
from data.model_indexes import ensure_model_index


def hash_key(key: str) -> bytes:
    """API keys are stored as their SHA-256: high-entropy secrets need no slow hash."""
    return hashlib.sha256(key.encode()).digest()


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


async def ensure_model_indexes(conn: AsyncConnection, identities: set[ModelIdentity]) -> None:
    for identity in sorted(identities, key=str):
        await ensure_model_index(conn, identity)


async def existing_owners(
    conn: AsyncConnection, table: sa.Table, ids: Sequence[UUID]
) -> dict[UUID, UUID]:
    """id -> account_id for the ids that already exist, whatever their account."""
    if not ids:
        return {}
    key = t.accounts.c.account_id if table is t.accounts else table.c.id
    rows = await conn.execute(sa.select(key, table.c.account_id).where(key.in_(list(ids))))
    return {row[0]: row[1] for row in rows}


async def key_owners(conn: AsyncConnection, keys: Sequence[str]) -> dict[bytes, UUID]:
    """key hash -> account_id for the keys that are already stored."""
    if not keys:
        return {}
    rows = await conn.execute(
        sa.select(t.api_keys.c.key_hash, t.api_keys.c.account_id).where(
            t.api_keys.c.key_hash.in_([hash_key(k) for k in keys])
        )
    )
    return {row[0]: row[1] for row in rows}


async def export_rows(conn: AsyncConnection) -> AsyncIterator[dict[str, Any]]:
    """Every account with its sessions, activity and chunks, in a stable order."""
    features: dict[UUID, list[str]] = {}
    for row in await conn.execute(sa.select(t.account_features).order_by("account_id", "feature")):
        features.setdefault(row.account_id, []).append(row.feature)
    settings = {
        row.account_id: row._mapping for row in await conn.execute(sa.select(t.embedding_settings))
    }
    accounts = (await conn.execute(sa.select(t.accounts).order_by(t.accounts.c.account_id))).all()
    for account in accounts:
        aid = account.account_id
        record: dict[str, Any] = {"type": "account", "id": str(aid), "name": account.name}
        if aid in settings:
            s = settings[aid]
            record["embedding"] = {
                "enabled": s["enabled"],
                "provider": s["provider"],
                "model": s["model"],
                "dimensions": s["dimensions"],
                "scope": s["scope"],
                "daily_cap_usd": None if s["daily_cap_usd"] is None else float(s["daily_cap_usd"]),
            }
        record["features"] = features.get(aid, [])
        yield record
        for table, order in (
            (t.runtime_sessions, ("started_at", "id")),
            (t.runtime_session_activity, ("runtime_session_id", "ordinal", "id")),
            (t.session_chunks, ("runtime_session_id", "occurred_at", "chunk_index", "id")),
        ):
            stream = await conn.stream(
                sa.select(table).where(table.c.account_id == aid).order_by(*order)
            )
            async for row in stream:
                yield _export_record(table, row._mapping)


def _export_record(table: sa.Table, row: Any) -> dict[str, Any]:
    if table is t.runtime_sessions:
        return {
            "type": "session",
            "id": str(row["id"]),
            "account_id": str(row["account_id"]),
            "title": row["title"],
            "source_type": row["source_type"],
            "source_id": row["source_id"],
            "reference": row["reference"],
            "status": row["status"],
            "started_at": row["started_at"].isoformat(),
            "last_activity_at": row["last_activity_at"].isoformat(),
        }
    if table is t.runtime_session_activity:
        return {
            "type": "activity",
            "id": str(row["id"]),
            "runtime_session_id": str(row["runtime_session_id"]),
            "ordinal": row["ordinal"],
            "occurred_at": row["occurred_at"].isoformat(),
            "role": row["role"],
            "kind": row["kind"],
            "content": row["content"],
            "api_usage_id": None if row["api_usage_id"] is None else str(row["api_usage_id"]),
        }
    embedding = row["embedding"]
    return {
        "type": "chunk",
        "id": str(row["id"]),
        "runtime_session_id": str(row["runtime_session_id"]),
        "source_kind": row["source_kind"],
        "source_id": None if row["source_id"] is None else str(row["source_id"]),
        "chunk_index": row["chunk_index"],
        "occurred_at": row["occurred_at"].isoformat(),
        "role": row["role"],
        "content": row["content"],
        "redaction_state": row["redaction_state"],
        "embedding_state": row["embedding_state"],
        "embedding_model": row["embedding_model"],
        "embedding": None if embedding is None else [float(x) for x in embedding],
        "embedded_at": None if row["embedded_at"] is None else row["embedded_at"].isoformat(),
    }
