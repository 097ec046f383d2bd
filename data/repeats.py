"""A session's repeats: the chunks whose vector equals an earlier chunk's of the same session
and model (an agent in a loop writes one turn thousands of times).

In an HNSW graph thousands of identical vectors are a clump that strands the points near it
(the known trap; the 1M benchmark's loop of 50,000). So each repeat names its session's first
chunk of that vector, its representative, in `repeat_of` (migration 0016); the HNSW indexes
hold only the chunks that name none (their predicates say `repeat_of IS NULL`,
data/model_indexes.py and data/account_indexes.py), and a lookup that finds a representative
adds its repeats, all at its distance, before it cuts to its nearest
(data/probe_lookups_sql.py). Identical vectors have identical distances, so whenever the
index finds the representative the lookup's answer is the exact scan's; the exact scans read
every chunk, repeats too, and are unchanged.

Marking is lazy, unmarking eager. A chunk not (yet) marked stands in the graph as itself,
which is always right, only slower near a clump: the indexer marks the sessions it embedded
at the end of its pass over an account; the import writes its rows marked
(data/staging.stage_repeats), before any index its transaction builds. A mark that would no
longer be true is cleared by the database itself (migration 0016's triggers) when the
chunk's or its representative's vector, model, state or redaction changes, or the
representative is deleted."""

from __future__ import annotations

from collections.abc import Collection
from uuid import UUID

from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncConnection


def marked(chunks: str, first: str = "x.written_seq NULLS FIRST, x.id") -> str:
    """The marks of `chunks` (a query of comparable chunks: account_id, id,
    runtime_session_id, embedding_model, embedding, occurred_at, and the columns `first`
    names, read as alias x), grouped by account, session, model and vector: each row's
    `repeat_of` (the group's first by `first`, unless it is that one) and, on a group's first,
    `repeats_until` (when the latest of the group occurred: a lookup within `windowDays` keeps
    it while one of them is within); `n`, the group's size, beside every column of `chunks`.

    The first written (by written_seq, the rows from before migration 0012 first, then id)
    stands for the rest: never written after a repeat of it, it is below every own index's
    mark that a repeat of it is below (data/account_indexes.py), so the index finds it
    wherever the tail's exact scan does not read the repeat."""
    return (
        "SELECT g.*, nullif(g.representative, g.id) AS repeat_of, "
        "CASE WHEN g.representative = g.id AND g.n > 1 THEN g.latest END AS repeats_until "
        "FROM (SELECT x.*, first_value(x.id) OVER w AS representative, "
        "max(x.occurred_at) OVER same AS latest, count(*) OVER same AS n "
        f"FROM ({chunks}) x WINDOW same AS (PARTITION BY x.account_id, x.runtime_session_id, "
        f"x.embedding_model, x.embedding), w AS (same ORDER BY {first})) g"
    )


# Every comparable chunk of the sessions, marked; only rows whose marks change are written.
REGROUP = (
    "UPDATE session_chunks c SET repeat_of = m.repeat_of, repeats_until = m.repeats_until FROM ("
    + marked(
        "SELECT c.account_id, c.id, c.runtime_session_id, c.embedding_model, c.embedding, "
        "c.occurred_at, c.written_seq FROM session_chunks c "
        "WHERE c.account_id = :account_id AND {sessions} "
        "AND c.redaction_state = 'clear' AND c.embedding_state = 'embedded'"
    )
    + ") m WHERE c.account_id = m.account_id AND c.id = m.id "
    "AND (c.repeat_of, c.repeats_until) IS DISTINCT FROM (m.repeat_of, m.repeats_until)"
)


async def mark_repeats(
    conn: AsyncConnection, account_id: UUID, sessions: Collection[UUID] | None = None
) -> int:
    """Mark the repeats of the account's sessions (all of them without `sessions`); the
    chunks whose mark changed."""
    if sessions is not None and not sessions:
        return 0
    where = "true" if sessions is None else "c.runtime_session_id = ANY(CAST(:sessions AS uuid[]))"
    params: dict[str, object] = {"account_id": account_id}
    if sessions is not None:
        params["sessions"] = list(sessions)
    result = await conn.execute(text(REGROUP.format(sessions=where)), params)
    return int(result.rowcount)
