"""`export`: every account, with its sessions, activity and chunks, written back in the
import format (API keys excluded), so an export imports into an empty database unchanged."""

from __future__ import annotations

import json
from typing import IO, Any

from sqlalchemy.ext.asyncio import AsyncEngine

from data import import_rows


def _time(value: Any) -> str | None:
    return None if value is None else str(value.isoformat())


def _id(value: Any) -> str | None:
    return None if value is None else str(value)


def account_record(account: Any, setting: Any | None, features: list[str]) -> dict[str, Any]:
    record: dict[str, Any] = {
        "type": "account",
        "id": str(account.account_id),
        "name": account.name,
    }
    if setting is not None:
        cap = setting.daily_cap_usd
        record["embedding"] = {
            "enabled": setting.enabled,
            "provider": setting.provider,
            "model": setting.model,
            "dimensions": setting.dimensions,
            "scope": setting.scope,
            "daily_cap_usd": None if cap is None else float(cap),
        }
        if setting.dense_model is not None:
            record["embedding"]["dense"] = {
                "provider": setting.dense_provider,
                "model": setting.dense_model,
                "dimensions": setting.dense_dimensions,
            }
    record["features"] = features
    return record


def row_record(kind: str, row: Any) -> dict[str, Any]:
    """A session, activity or chunk row as its line of the import format."""
    if kind == "session":
        return {
            "type": "session",
            "id": str(row.id),
            "account_id": str(row.account_id),
            "title": row.title,
            "source_type": row.source_type,
            "source_id": row.source_id,
            "reference": row.reference,
            "status": row.status,
            "started_at": _time(row.started_at),
            "last_activity_at": _time(row.last_activity_at),
        }
    if kind == "activity":
        return {
            "type": "activity",
            "id": str(row.id),
            "runtime_session_id": str(row.runtime_session_id),
            "ordinal": row.ordinal,
            "occurred_at": _time(row.occurred_at),
            "role": row.role,
            "kind": row.kind,
            "content": row.content,
            "api_usage_id": _id(row.api_usage_id),
        }
    embedding = row.embedding
    return {
        "type": "chunk",
        "id": str(row.id),
        "runtime_session_id": str(row.runtime_session_id),
        "source_kind": row.source_kind,
        "source_id": _id(row.source_id),
        "chunk_index": row.chunk_index,
        "occurred_at": _time(row.occurred_at),
        "role": row.role,
        "content": row.content,
        "redaction_state": row.redaction_state,
        "embedding_state": row.embedding_state,
        "embedding_model": row.embedding_model,
        "embedding": None if embedding is None else [float(x) for x in embedding],
        "embedded_at": _time(row.embedded_at),
    }


async def export(engine: AsyncEngine, out: IO[str]) -> int:
    """Write every account back in the import format (API keys excluded); return the lines."""
    count = 0

    def write(record: dict[str, Any]) -> None:
        nonlocal count
        out.write(json.dumps(record, ensure_ascii=False, separators=(",", ":")) + "\n")
        count += 1

    async with engine.connect() as conn:
        for account, setting, features in await import_rows.export_accounts(conn):
            write(account_record(account, setting, features))
            for kind in ("session", "activity", "chunk"):
                async for row in import_rows.export_rows(conn, account.account_id, kind):
                    write(row_record(kind, row))
    return count
