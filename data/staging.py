"""The staging table of an import: every line of a file streamed in by one binary COPY,
then checked as a set against itself and the database. Dropped when the transaction ends."""

from __future__ import annotations

from collections.abc import AsyncIterable, Sequence
from dataclasses import dataclass
from uuid import UUID

from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncConnection

from data.repeats import marked

STAGE = "import_stage"
OWNER = "import_owner"

# (name, type) in COPY order: one column set for the three kinds of line (unused ones NULL),
# so a file is one COPY stream whatever the order of its lines.
STAGE_COLUMNS = (
    ("line", "integer"),
    ("type", "text"),
    ("id", "uuid"),
    ("account_id", "uuid"),
    ("runtime_session_id", "uuid"),
    ("title", "text"),
    ("source_type", "text"),
    ("session_source_id", "text"),
    ("reference", "text"),
    ("status", "text"),
    ("started_at", "timestamptz"),
    ("last_activity_at", "timestamptz"),
    ("ordinal", "integer"),
    ("occurred_at", "timestamptz"),
    ("role", "text"),
    ("kind", "text"),
    ("content", "text"),
    ("api_usage_id", "uuid"),
    ("source_kind", "text"),
    ("source_id", "uuid"),
    ("chunk_index", "integer"),
    ("content_hash", "bytea"),
    ("redaction_state", "text"),
    ("embedding_state", "text"),
    ("embedding_model", "text"),
    ("embedding", "text"),  # pgvector's text form: read by vector_in, no array codec
    ("embedded_at", "timestamptz"),
    ("searchable", "text"),  # a chunk's content with its credentials left out
)
STAGE_COLUMN_NAMES = tuple(name for name, _ in STAGE_COLUMNS)


@dataclass(frozen=True, slots=True)
class Conflict:
    """A staged line the database or the file itself contradicts."""

    line: int
    code: str  # duplicate | unknown_account | other_account | unknown_session | outside_account
    type: str
    id: UUID
    account_id: UUID | None = None  # the other account (duplicate, other_account, outside_account)
    other_line: int | None = None  # the first line with the same id (duplicate)


async def create_stage(conn: AsyncConnection) -> None:
    columns = ", ".join(f"{name} {kind}" for name, kind in STAGE_COLUMNS)
    await conn.execute(text(f"CREATE TEMP TABLE {STAGE} ({columns}) ON COMMIT DROP"))
    # Staged text is read once or twice, then dropped: compressing it (pglz) made the COPY
    # about eight times slower.
    await conn.execute(
        text(
            f"ALTER TABLE {STAGE} ALTER content SET STORAGE EXTERNAL, "
            "ALTER embedding SET STORAGE EXTERNAL"
        )
    )


async def copy_into_stage(conn: AsyncConnection, rows: AsyncIterable[Sequence[object]]) -> None:
    """Stream rows (in STAGE_COLUMNS order) into the staging table by one binary COPY, read
    as they come: parsing the file and writing it overlap."""
    raw = await conn.get_raw_connection()
    driver = raw.driver_connection
    assert driver is not None
    await driver.copy_records_to_table(STAGE, records=rows, columns=list(STAGE_COLUMN_NAMES))
    await conn.execute(text(f"ANALYZE {STAGE}"))


async def resolve_owners(conn: AsyncConnection) -> None:
    """The account of every session the file names: its own session lines first, then the
    database's sessions its activity and chunks refer to."""
    await conn.execute(
        text(
            f"CREATE TEMP TABLE {OWNER} ON COMMIT DROP AS "
            "SELECT DISTINCT ON (id) id, account_id FROM ("
            f" SELECT id, account_id, 0 AS rank FROM {STAGE} WHERE type = 'session'"
            " UNION ALL"
            " SELECT r.id, r.account_id, 1 FROM runtime_sessions r WHERE r.id IN"
            f"  (SELECT runtime_session_id FROM {STAGE} WHERE type IN ('activity', 'chunk'))"
            ") owners ORDER BY id, rank, account_id"
        )
    )
    await conn.execute(text(f"ANALYZE {OWNER}"))


# Each branch yields (line, code, type, id, account_id, other_line).
_DUPLICATES = (
    "SELECT line, 'duplicate', type, id, first_account, first_line FROM ("
    " SELECT line, type, id, min(line) OVER w AS first_line,"
    "  first_value(account_id) OVER (w ORDER BY line) AS first_account"
    f" FROM {STAGE} WINDOW w AS (PARTITION BY type, id)) d WHERE line > first_line"
)
_UNKNOWN_ACCOUNTS = (
    "SELECT s.line, 'unknown_account', s.type, s.account_id, NULL::uuid, NULL::int"
    f" FROM {STAGE} s WHERE s.type = 'session'"
    " AND s.account_id <> ALL(CAST(:file_accounts AS uuid[]))"
    " AND NOT EXISTS (SELECT 1 FROM accounts a WHERE a.account_id = s.account_id)"
)
_SESSIONS_OF_OTHERS = (
    "SELECT s.line, 'other_account', s.type, s.id, r.account_id, NULL::int"
    f" FROM {STAGE} s JOIN runtime_sessions r ON r.id = s.id AND r.account_id <> s.account_id"
    " WHERE s.type = 'session'"
)
_UNKNOWN_SESSIONS = (
    "SELECT s.line, 'unknown_session', s.type, s.runtime_session_id, NULL::uuid, NULL::int"
    f" FROM {STAGE} s WHERE s.type IN ('activity', 'chunk')"
    f" AND NOT EXISTS (SELECT 1 FROM {OWNER} o WHERE o.id = s.runtime_session_id)"
)


# Only with --account: the file's own sessions are of that account (checked as it is read),
# so a session owning a staged line under another account is the database's.
_OUTSIDE_ACCOUNT = (
    "SELECT s.line, 'outside_account', s.type, s.runtime_session_id, o.account_id, NULL::int"
    f" FROM {STAGE} s JOIN {OWNER} o ON o.id = s.runtime_session_id"
    " WHERE s.type IN ('activity', 'chunk') AND o.account_id <> CAST(:confined AS uuid)"
)


def _rows_of_others(kind: str, table: str) -> str:
    return (
        f"SELECT s.line, 'other_account', s.type, s.id, x.account_id, NULL::int FROM {STAGE} s"
        f" JOIN {OWNER} o ON o.id = s.runtime_session_id"
        f" JOIN {table} x ON x.id = s.id AND x.account_id <> o.account_id"
        f" WHERE s.type = '{kind}'"
    )


async def conflicts(
    conn: AsyncConnection, file_accounts: Sequence[UUID], limit: int, confined: UUID | None = None
) -> tuple[int, list[Conflict]]:
    """Every contradiction of the staged lines, in line order: the total and the first
    `limit`; with `confined`, activity and chunks of another account's session too. Ids are
    compared as sets (joins), never one bind parameter each."""
    branches = (
        _DUPLICATES,
        _UNKNOWN_ACCOUNTS,
        _SESSIONS_OF_OTHERS,
        _UNKNOWN_SESSIONS,
        _rows_of_others("activity", "runtime_session_activity"),
        _rows_of_others("chunk", "session_chunks"),
        *(() if confined is None else (_OUTSIDE_ACCOUNT,)),
    )
    union = " UNION ALL ".join(f"({b})" for b in branches)
    rows = (
        await conn.execute(
            text(
                "SELECT line, code, type, id, account_id, other_line, count(*) OVER () "
                f"FROM ({union}) c(line, code, type, id, account_id, other_line) "
                "ORDER BY line, code LIMIT :limit"
            ),
            {"file_accounts": list(file_accounts), "limit": limit, "confined": confined},
        )
    ).all()
    total = rows[0][6] if rows else 0
    return total, [Conflict(*row[:6]) for row in rows]


async def staged_chunk_accounts(conn: AsyncConnection) -> list[UUID]:
    """The accounts the staged chunks belong to."""
    rows = await conn.execute(
        text(
            f"SELECT DISTINCT o.account_id FROM {STAGE} s JOIN {OWNER} o "
            "ON o.id = s.runtime_session_id WHERE s.type = 'chunk' ORDER BY 1"
        )
    )
    return [row[0] for row in rows]


REPEATS = "import_repeats"


async def stage_repeats(conn: AsyncConnection) -> None:
    """The marks (data/repeats.marked) of every staged chunk that repeats another's vector or
    is repeated, among the staged chunks and the comparable ones its session has already:
    the rows already written first, then the staged ones in the file's order, which
    import_rows.upsert_staged writes them in. The import writes its rows marked: marked only
    after the insert, a build in the file's transaction would take the rows' first versions
    into its graph (PostgreSQL indexes the versions a transaction itself replaced)."""
    await conn.execute(
        text(
            f"CREATE TEMP TABLE {REPEATS} (id uuid PRIMARY KEY, representative uuid, "
            "repeats_until timestamptz) ON COMMIT DROP"
        )
    )
    chunks = (
        "SELECT o.account_id, s.id, s.runtime_session_id, s.embedding_model, "
        "CAST(s.embedding AS vector) AS embedding, s.occurred_at, "
        "NULL::bigint AS written_seq, s.line, true AS staged "
        f"FROM {STAGE} s JOIN {OWNER} o ON o.id = s.runtime_session_id "
        "WHERE s.type = 'chunk' AND s.redaction_state = 'clear' "
        "AND s.embedding_state = 'embedded' "
        "UNION ALL SELECT c.account_id, c.id, c.runtime_session_id, c.embedding_model, "
        "c.embedding, c.occurred_at, c.written_seq, NULL::int, false FROM session_chunks c "
        "WHERE c.redaction_state = 'clear' AND c.embedding_state = 'embedded' "
        f"AND (c.account_id, c.runtime_session_id) IN (SELECT o.account_id, o.id FROM {OWNER} o) "
        f"AND NOT EXISTS (SELECT 1 FROM {STAGE} s WHERE s.type = 'chunk' AND s.id = c.id)"
    )
    first = "x.staged, x.written_seq NULLS FIRST, x.line, x.id"
    await conn.execute(
        text(
            f"INSERT INTO {REPEATS} SELECT m.id, m.repeat_of, m.repeats_until "
            f"FROM ({marked(chunks, first)}) m WHERE m.staged AND m.n > 1"
        )
    )


async def sessions_with_chunks(conn: AsyncConnection) -> dict[UUID, list[UUID]]:
    """The sessions of the staged chunks that have chunks written already, by account (read
    before the file's rows are written): the ones whose marks the rows may change beyond
    what `stage_repeats` writes (an updated chunk, a representative already written)."""
    rows = await conn.execute(
        text(
            "SELECT o.account_id, array_agg(DISTINCT s.runtime_session_id) "
            f"FROM {STAGE} s JOIN {OWNER} o ON o.id = s.runtime_session_id "
            "WHERE s.type = 'chunk' AND EXISTS (SELECT 1 FROM session_chunks c "
            "WHERE c.account_id = o.account_id AND c.runtime_session_id = s.runtime_session_id) "
            "GROUP BY o.account_id ORDER BY 1"
        )
    )
    return {account_id: list(sessions) for account_id, sessions in rows}


async def staged_new_comparable(conn: AsyncConnection) -> list[tuple[UUID, str, int, int]]:
    """Per (account, model) of the staged chunks: the clear embedded ones the account does
    not have yet (what the file adds to its HNSW graphs), and those it has already."""
    rows = await conn.execute(
        text(
            f"WITH incoming AS (SELECT o.account_id, s.embedding_model AS model, count(*) AS n "
            f"FROM {STAGE} s JOIN {OWNER} o ON o.id = s.runtime_session_id "
            "WHERE s.type = 'chunk' AND s.embedding_state = 'embedded' "
            "AND s.redaction_state = 'clear' AND s.embedding_model IS NOT NULL "
            "AND NOT EXISTS (SELECT 1 FROM session_chunks c "
            "WHERE c.account_id = o.account_id AND c.id = s.id) GROUP BY 1, 2) "
            "SELECT i.account_id, i.model, i.n, (SELECT count(*) FROM session_chunks c "
            "WHERE c.account_id = i.account_id AND c.embedding_model = i.model "
            "AND c.redaction_state = 'clear' AND c.embedding_state = 'embedded') "
            "FROM incoming i ORDER BY 1, 2"
        )
    )
    return [(row[0], row[1], int(row[2]), int(row[3])) for row in rows]
