"""per-account HNSW index registry

Revision ID: 0003
Revises: 0002
Create Date: 2026-12-01 00:00:00
"""

import sqlalchemy as sa
from alembic import op

revision: str = '0003'
down_revision: str | None = '0002'


def upgrade() -> None:
    op.create_table('account_model_indexes',
    sa.Column('account_id', sa.UUID(), nullable=False),
    sa.Column('model_identity', sa.Text(), nullable=False),
    sa.Column('index_name', sa.Text(), nullable=False),
    sa.Column('chunks_at_build', sa.Integer(), nullable=False),
    sa.Column('built_at', sa.DateTime(timezone=True), server_default=sa.text('now()'), nullable=False),
    sa.PrimaryKeyConstraint('account_id', 'model_identity', name=op.f('account_model_indexes_pkey'))
    )


def downgrade() -> None:
    op.execute(
        "DO $$ DECLARE r record; BEGIN "
        "FOR r IN SELECT index_name FROM account_model_indexes LOOP "
        "EXECUTE format('DROP INDEX IF EXISTS %I', r.index_name); END LOOP; END $$"
    )
    op.drop_table('account_model_indexes')
