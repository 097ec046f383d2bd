"""otlp batches: the receiver acknowledges an export request once it is stored as sent

`otlp_batches` holds each export request the live receiver (POST /v1/traces) acknowledged,
as it was sent, until the indexer has made its spans into sessions (transfer/live.py); the
indexer deletes it in the transaction that stores its spans. The receiver's answer then
costs one insert, whatever the sessions it touches hold. `failure` keeps why a request
could not be made into sessions (it is kept, not retried, not lost). Its body is stored
without PostgreSQL's compression: a gzipped body does not shrink, and a plain one is deleted
moments later.

Revision ID: 0018
Revises: 0017
"""

import sqlalchemy as sa
from alembic import op

revision: str = '0018'
down_revision: str | None = '0017'


def upgrade() -> None:
    op.create_table(
        'otlp_batches',
        sa.Column('id', sa.BigInteger(), sa.Identity(), nullable=False),
        sa.Column('account_id', sa.Uuid(), nullable=False),
        sa.Column('encoding', sa.Text(), nullable=False),
        sa.Column('gzipped', sa.Boolean(), nullable=False),
        sa.Column('body', sa.LargeBinary(), nullable=False),
        sa.Column(
            'received_at', sa.DateTime(timezone=True), server_default=sa.func.now(), nullable=False
        ),
        sa.Column('failure', sa.Text(), nullable=True),
        sa.ForeignKeyConstraint(
            ['account_id'], ['accounts.account_id'], name='otlp_batches_account_id_fkey'
        ),
        sa.PrimaryKeyConstraint('id', name='otlp_batches_pkey'),
    )
    op.create_index('otlp_batches_account_idx', 'otlp_batches', ['account_id', 'id'])
    op.execute('ALTER TABLE otlp_batches ALTER COLUMN body SET STORAGE EXTERNAL')


def downgrade() -> None:
    op.drop_table('otlp_batches')
