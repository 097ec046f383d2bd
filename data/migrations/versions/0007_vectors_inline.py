"""vectors kept inline: session_chunks.embedding stored MAIN, not pgvector's EXTERNAL

A chunk whose row passes the 2 kB TOAST threshold (a long passage beside a 384-d vector)
had its vector moved out of line, so every exact scan and every re-ranked candidate read it
through the TOAST table: on the coding-agents corpus an exact scan of one probe took 15.6 ms
with EXTERNAL and 3.8 ms with MAIN after the same rewrite. MAIN keeps the vector in the row
and moves the content out instead; only a row that still does not fit moves it. Rows written
before this keep their layout until the table is rewritten (`VACUUM FULL session_chunks`).

Revision ID: 0007
Revises: 0006
Create Date: 2026-12-03 00:00:00
"""

from alembic import op

revision: str = '0007'
down_revision: str | None = '0006'


def upgrade() -> None:
    op.execute('ALTER TABLE session_chunks ALTER COLUMN embedding SET STORAGE MAIN')


def downgrade() -> None:
    op.execute('ALTER TABLE session_chunks ALTER COLUMN embedding SET STORAGE EXTERNAL')
