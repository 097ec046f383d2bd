"""shared index scope: session_chunks.in_shared_index, false for the rows of an account that
has its own index of their model when they are written

A large account's rows went into two HNSW graphs, the model's shared index and the account's
own, and an import into an account that already had its own index inserted every new row
into both, one by one (issue #29: 50,000 chunks in three files, the later files at 59 and 80
chunks/s). Rows written while the account has (or, in the same transaction, gets) its own
index now carry in_shared_index = false, and the model's shared index, built from now on with
`AND in_shared_index` in its predicate, leaves them out. A shared index built before keeps
every row (its predicate does not name the column, and queries that do still use it) until it
is built again.

Revision ID: 0010
Revises: 0009
"""

import sqlalchemy as sa
from alembic import op

revision: str = '0010'
down_revision: str | None = '0009'


def upgrade() -> None:
    op.add_column(
        'session_chunks',
        sa.Column('in_shared_index', sa.Boolean(), server_default=sa.text('true'), nullable=False),
    )


def downgrade() -> None:  # drops with it the shared indexes whose predicate names it
    op.drop_column('session_chunks', 'in_shared_index')
