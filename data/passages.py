"""The whole text of passages, for the terms two of them share (resolvers/shared_terms.py):
clear passages only, of one account."""

from __future__ import annotations

from collections.abc import Sequence
from uuid import UUID

import sqlalchemy as sa
from sqlalchemy.dialects.postgresql import ARRAY
from sqlalchemy.dialects.postgresql import UUID as PG_UUID
from sqlalchemy.ext.asyncio import AsyncConnection

from data import tables as t


async def clear_texts(
    conn: AsyncConnection, account_id: UUID, chunk_ids: Sequence[UUID]
) -> dict[UUID, str]:
    """The content of each of these chunks that is still clear (a withheld one is not read)."""
    if not chunk_ids:
        return {}
    c = t.session_chunks.c
    ids = sa.bindparam("ids", sorted(set(chunk_ids)), type_=ARRAY(PG_UUID(as_uuid=True)))
    rows = await conn.execute(
        sa.select(c.id, c.content).where(
            c.account_id == account_id, c.id == sa.any_(ids), c.redaction_state == "clear"
        )
    )
    return {row.id: row.content for row in rows}
