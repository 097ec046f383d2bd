"""lexical embedder fits, one per account

Revision ID: 0006
Revises: 0005
Create Date: 2026-12-02 00:00:00
"""

import sqlalchemy as sa
from alembic import op

revision: str = '0006'
down_revision: str | None = '0005'


def upgrade() -> None:
    op.create_table('lexical_fits',
    sa.Column('account_id', sa.UUID(), nullable=False),
    sa.Column('model_identity', sa.Text(), nullable=False),
    sa.Column('sessions', sa.Integer(), nullable=False),
    sa.Column('weights', sa.LargeBinary(), nullable=False),
    sa.Column('fitted_at', sa.DateTime(timezone=True), server_default=sa.text('now()'), nullable=False),
    sa.ForeignKeyConstraint(['account_id'], ['accounts.account_id'], name=op.f('lexical_fits_account_id_fkey')),
    sa.PrimaryKeyConstraint('account_id', name=op.f('lexical_fits_pkey'))
    )


def downgrade() -> None:
    op.drop_table('lexical_fits')
