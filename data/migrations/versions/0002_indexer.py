"""indexer: what was chunked, and repeated content found by hash

Revision ID: 0002
Revises: 0001
Create Date: 2026-11-30 01:00:00
"""

import sqlalchemy as sa
from alembic import op

revision: str = '0002'
down_revision: str | None = '0001'


def upgrade() -> None:
    op.create_table('session_chunking',
    sa.Column('account_id', sa.UUID(), nullable=False),
    sa.Column('runtime_session_id', sa.UUID(), nullable=False),
    sa.Column('policy', sa.Text(), nullable=False),
    sa.Column('activity_count', sa.Integer(), nullable=False),
    sa.Column('last_ordinal', sa.Integer(), nullable=True),
    sa.Column('chunk_count', sa.Integer(), nullable=False),
    sa.Column('chunked_at', sa.DateTime(timezone=True), server_default=sa.text('now()'), nullable=False),
    sa.ForeignKeyConstraint(['account_id', 'runtime_session_id'], ['runtime_sessions.account_id', 'runtime_sessions.id'], name='session_chunking_session_fkey'),
    sa.PrimaryKeyConstraint('account_id', 'runtime_session_id', name=op.f('session_chunking_pkey'))
    )
    op.create_index('session_chunks_content_hash_idx', 'session_chunks', ['account_id', 'content_hash'], unique=False)


def downgrade() -> None:
    op.drop_index('session_chunks_content_hash_idx', table_name='session_chunks')
    op.drop_table('session_chunking')
