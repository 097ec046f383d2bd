"""unclear chunks: the chunks that left `clear`, found without reading every chunk

Every indexing pass strips the vectors of an account's chunks that left `clear`
(data/indexing.strip_unclear_vectors). Without an index it read every chunk of every
account (a sequential scan: 40 ms at 10,000 chunks, seconds at a million), on each pass the
live receiver wakes. A partial index of the few that are not `clear` finds them at once.

Revision ID: 0020
Revises: 0019
"""

import sqlalchemy as sa
from alembic import op

revision: str = '0020'
down_revision: str | None = '0019'


def upgrade() -> None:
    op.create_index(
        'session_chunks_unclear_idx',
        'session_chunks',
        ['account_id'],
        postgresql_where=sa.text("redaction_state <> 'clear'"),
    )


def downgrade() -> None:
    op.drop_index('session_chunks_unclear_idx', table_name='session_chunks')
