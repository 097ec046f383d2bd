"""deployment secrets: the key that signs paging cursors

Revision ID: 0005
Revises: 0004
Create Date: 2026-12-02 00:00:00
"""

import secrets
import sqlalchemy as sa
from alembic import op

revision: str = '0005'
down_revision: str | None = '0004'


def upgrade() -> None:
    secrets_table = op.create_table('deployment_secrets',
    sa.Column('name', sa.Text(), nullable=False),
    sa.Column('secret', sa.LargeBinary(), nullable=False),
    sa.Column('created_at', sa.DateTime(timezone=True), server_default=sa.text('now()'), nullable=False),
    sa.CheckConstraint('octet_length(secret) >= 32', name=op.f('deployment_secrets_secret_length_check')),
    sa.PrimaryKeyConstraint('name', name=op.f('deployment_secrets_pkey'))
    )
    # Made here, where the role may write: a role that serves read-only can still read it.
    op.bulk_insert(secrets_table, [{'name': 'cursor', 'secret': secrets.token_bytes(32)}])


def downgrade() -> None:
    op.drop_table('deployment_secrets')
