"""embedding attempts and errors of chunks; spend kept to 1e-10 USD

Revision ID: 0004
Revises: 0003
Create Date: 2026-12-02 00:00:00
"""

import sqlalchemy as sa
from alembic import op

revision: str = '0004'
down_revision: str | None = '0003'


def upgrade() -> None:
    op.add_column('session_chunks', sa.Column('embed_attempts', sa.Integer(), server_default='0', nullable=False))
    op.add_column('session_chunks', sa.Column('embed_error', sa.Text(), nullable=True))
    # A hosted model bills fractions of a micro-dollar per batch: six decimals rounded
    # small batches to nothing, and the daily cap never saw them.
    op.alter_column('api_usage', 'cost_usd', type_=sa.Numeric(18, 10), existing_nullable=False)


def downgrade() -> None:
    op.alter_column('api_usage', 'cost_usd', type_=sa.Numeric(12, 6), existing_nullable=False)
    op.drop_column('session_chunks', 'embed_error')
    op.drop_column('session_chunks', 'embed_attempts')
