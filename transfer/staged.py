"""Records as rows of the staging table, and the checks that need the whole file (accounts,
keys) or the database (conflicts), as `file:line` reasons."""

from __future__ import annotations

from typing import Any
from uuid import UUID

from sqlalchemy.ext.asyncio import AsyncConnection

from data.accounts import hash_key
from data.import_rows import content_hash, key_owners
from data.staging import Conflict
from transfer.import_format import AccountRecord, ActivityRecord, ChunkRecord, Record, SessionRecord
from values import credentials


def stage_row(line: int, record: SessionRecord | ActivityRecord | ChunkRecord) -> tuple[Any, ...]:
    """The record as a row of the staging table, in STAGE_COLUMN_NAMES order."""
    r = record
    if isinstance(r, ChunkRecord):
        state = ChunkRecord.stored_state(r.embedding_state, r.embedding)
        return (
            *(line, "chunk", r.id, None, r.runtime_session_id),
            *(None,) * 8,
            *(r.occurred_at, r.role, None, r.content, None),
            *(r.source_kind, r.source_id, r.chunk_index, content_hash(r.content)),
            *(r.redaction_state, state, r.embedding_model, r.embedding_text, r.embedded_at),
            credentials.without(r.content),
        )
    if isinstance(r, ActivityRecord):
        return (
            *(line, "activity", r.id, None, r.runtime_session_id),
            *(None,) * 7,
            *(r.ordinal, r.occurred_at, r.role, r.kind, r.content, r.api_usage_id),
            *(None,) * 10,
        )
    return (
        *(line, "session", r.id, r.account_id, None, r.title, r.source_type, r.source_id),
        *(r.reference, r.status, r.started_at, r.last_activity_at),
        *(None,) * 16,
    )


async def account_problems(
    conn: AsyncConnection, accounts: list[tuple[int, AccountRecord]]
) -> list[tuple[int, str]]:
    """Account lines the file or the database contradicts: an id twice, a key given to two
    accounts in the file, or a key another account already holds."""
    problems: list[tuple[int, str]] = []
    first_line: dict[object, int] = {}
    key_account: dict[bytes, tuple[int, object]] = {}
    for line, account in accounts:
        if account.id in first_line:
            problems.append(
                (line, f"id: account {account.id} is also on line {first_line[account.id]}")
            )
            continue
        first_line[account.id] = line
        for key in account.api_keys:
            seen = key_account.setdefault(hash_key(key.key), (line, account.id))
            if seen[1] != account.id:
                problems.append((line, f"api_keys: a key also given on line {seen[0]}"))
    stored = await key_owners(conn, [k.key for _, a in accounts for k in a.api_keys])
    for line, account in accounts:
        if any(stored.get(hash_key(k.key), account.id) != account.id for k in account.api_keys):
            problems.append((line, "api_keys: a key already belongs to another account"))
    return problems


def outside_account(record: Record, confined: UUID) -> str | None:
    """Why a line names an account other than the one `--account` confines its file to, or
    None. Lines pointing at another account's stored session are found by the conflicts."""
    if isinstance(record, AccountRecord) and record.id != confined:
        return f"id: account {record.id} is not the --account of this import ({confined})"
    if isinstance(record, SessionRecord) and record.account_id != confined:
        return (
            f"account_id: account {record.account_id} is not the --account of this import "
            f"({confined})"
        )
    return None


def conflict_reason(conflict: Conflict, confined: UUID | None = None) -> str:
    """The `file:line` reason of a conflict found in the staged file."""
    c = conflict
    if c.code == "outside_account":
        return (
            f"runtime_session_id: session {c.id} belongs to another account than the "
            f"--account of this import ({confined})"
        )
    if c.code == "duplicate":
        if c.type == "session" and c.account_id is not None:
            return (
                f"id: session {c.id} is also on line {c.other_line}, under account {c.account_id}"
            )
        return f"id: {c.type} {c.id} is also on line {c.other_line}"
    if c.code == "unknown_account":
        return f"account_id: unknown account {c.id}"
    if c.code == "unknown_session":
        return f"runtime_session_id: unknown session {c.id}"
    return f"id: {c.type} {c.id} already belongs to another account"
