"""`import` and `export`: a file is validated whole, then written in one transaction."""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

import sqlalchemy as sa
import structlog
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine

from data import load
from data import tables as t
from data.account_indexes import ensure_large_account_indexes
from similar_sessions.records import (
    AccountRecord,
    ActivityRecord,
    ChunkRecord,
    LineError,
    SessionRecord,
    parse_line,
)

log = structlog.get_logger(__name__)
MAX_REPORTED_ERRORS = 20


class ImportRefused(ValueError):
    """A file had lines that cannot be imported; nothing of it was written."""

    def __init__(self, errors: list[LineError]) -> None:
        shown = "\n".join(str(e) for e in errors[:MAX_REPORTED_ERRORS])
        more = len(errors) - MAX_REPORTED_ERRORS
        super().__init__(shown + (f"\n... and {more} more" if more > 0 else ""))
        self.errors = errors


@dataclass
class ParsedFile:
    path: str
    accounts: list[tuple[int, AccountRecord]] = field(default_factory=list)
    sessions: list[tuple[int, SessionRecord]] = field(default_factory=list)
    activity: list[tuple[int, ActivityRecord]] = field(default_factory=list)
    chunks: list[tuple[int, ChunkRecord]] = field(default_factory=list)

    @property
    def counts(self) -> dict[str, int]:
        return {
            "accounts": len(self.accounts),
            "sessions": len(self.sessions),
            "activity": len(self.activity),
            "chunks": len(self.chunks),
        }


def parse_lines(path: str, lines: Iterable[str]) -> ParsedFile:
    """Parse and validate every line; raise ImportRefused naming each bad line."""
    parsed, errors = ParsedFile(path), []
    for number, text in enumerate(lines, start=1):
        if not text.strip():
            continue
        try:
            record = parse_line(text)
        except ValueError as exc:
            errors.append(LineError(path, number, str(exc)))
            continue
        bucket = {
            "account": parsed.accounts,
            "session": parsed.sessions,
            "activity": parsed.activity,
            "chunk": parsed.chunks,
        }[record.type]
        bucket.append((number, record))  # type: ignore[attr-defined]
    if errors:
        raise ImportRefused(errors)
    return parsed


async def import_file(
    engine: AsyncEngine, path: Path, account_index_min_chunks: int | None = None
) -> dict[str, int]:
    """Import one file in one transaction: all of it, or (on any bad line) none of it.
    With account_index_min_chunks, accounts grown past it get their own HNSW index."""
    with path.open(encoding="utf-8") as handle:
        parsed = parse_lines(str(path), handle)
    async with engine.begin() as conn:
        await write(conn, parsed, account_index_min_chunks)
    log.info("imported", path=str(path), **parsed.counts)
    return parsed.counts


async def write(
    conn: AsyncConnection, parsed: ParsedFile, account_index_min_chunks: int | None = None
) -> None:
    """Check references against the file and the database, then upsert everything; then,
    with account_index_min_chunks, build the own index of each account grown past it."""
    errors: list[LineError] = []

    def refuse(line: int, reason: str) -> None:
        errors.append(LineError(parsed.path, line, reason))

    file_accounts = {r.id for _, r in parsed.accounts}
    db_accounts = set(
        await load.existing_owners(conn, t.accounts, [r.account_id for _, r in parsed.sessions])
    )
    referenced = [r.id for _, r in parsed.sessions]
    referenced += [r.runtime_session_id for _, r in parsed.activity]
    referenced += [r.runtime_session_id for _, r in parsed.chunks]
    db_owner = await load.existing_owners(conn, t.runtime_sessions, referenced)
    session_owner = dict(db_owner)
    for line, s in parsed.sessions:
        if s.account_id not in file_accounts and s.account_id not in db_accounts:
            refuse(line, f"account_id: unknown account {s.account_id}")
        elif db_owner.get(s.id, s.account_id) != s.account_id:
            refuse(line, f"id: session {s.id} already belongs to another account")
        session_owner[s.id] = s.account_id

    def rows_of(
        table: sa.Table, records: list[tuple[int, ActivityRecord]] | list[tuple[int, ChunkRecord]]
    ) -> list[tuple[int, dict[str, Any]]]:
        rows = []
        for line, record in records:
            account = session_owner.get(record.runtime_session_id)
            if account is None:
                refuse(line, f"runtime_session_id: unknown session {record.runtime_session_id}")
                continue
            rows.append((line, {"account_id": account, **record.model_dump(exclude={"type"})}))
        return rows

    activity_rows = rows_of(t.runtime_session_activity, parsed.activity)
    chunk_rows = rows_of(t.session_chunks, parsed.chunks)
    for _, row in chunk_rows:
        row["embedding_state"] = ChunkRecord.stored_state(row["embedding_state"], row["embedding"])
        row["content_hash"] = load.content_hash(row["content"])
    for table, rows in (
        (t.runtime_session_activity, activity_rows),
        (t.session_chunks, chunk_rows),
    ):
        owners = await load.existing_owners(conn, table, [row["id"] for _, row in rows])
        for line, row in rows:
            if owners.get(row["id"], row["account_id"]) != row["account_id"]:
                refuse(line, f"id: {row['id']} already belongs to another account")
    key_owners = await load.key_owners(
        conn, [k.key for _, a in parsed.accounts for k in a.api_keys]
    )
    for line, a in parsed.accounts:
        if any(key_owners.get(load.hash_key(k.key), a.id) != a.id for k in a.api_keys):
            refuse(line, "api_keys: a key already belongs to another account")
    if errors:
        raise ImportRefused(sorted(errors, key=lambda e: e.line))

    identities = {c.identity for _, c in parsed.chunks if c.embedding is not None}
    for _, a in parsed.accounts:
        await load.upsert_rows(conn, t.accounts, [{"account_id": a.id, "name": a.name}])
        await load.replace_features(conn, a.id, a.features)
        setting = None if a.embedding is None else a.embedding.model_dump()
        await load.replace_embedding_setting(conn, a.id, setting)
        await load.add_api_keys(conn, a.id, [(k.key, k.scopes) for k in a.api_keys])
        if a.embedding is not None:
            identities.add(a.embedding.identity)
    session_rows = [
        {"account_id": s.account_id, **s.model_dump(exclude={"type", "account_id"})}
        for _, s in parsed.sessions
    ]
    await load.upsert_rows(conn, t.runtime_sessions, session_rows)
    await load.upsert_rows(conn, t.runtime_session_activity, [row for _, row in activity_rows])
    await load.ensure_model_indexes(conn, identities)
    await load.upsert_rows(conn, t.session_chunks, [row for _, row in chunk_rows], batch=200)
    if account_index_min_chunks is not None and chunk_rows:
        touched = sorted({row["account_id"] for _, row in chunk_rows})
        for built in await ensure_large_account_indexes(conn, account_index_min_chunks, touched):
            log.info(
                "account_index_built",
                account_id=str(built.account_id),
                model_identity=str(built.identity),
                chunks=built.chunks,
                seconds=round(built.seconds, 2),
            )


async def export(engine: AsyncEngine, out: IO[str]) -> int:
    """Write every account back in the import format (API keys excluded); return the lines."""
    count = 0
    async with engine.connect() as conn:
        async for record in load.export_rows(conn):
            out.write(json.dumps(record, ensure_ascii=False, separators=(",", ":")) + "\n")
            count += 1
    return count
