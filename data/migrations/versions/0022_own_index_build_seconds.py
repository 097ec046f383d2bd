"""own index build seconds: account_model_indexes.build_seconds

How long the account's own index took to build, the last time it was built. A tail is merged
only once the index has been up MERGE_REST times as long as that (data/own_index_rebuilds.py):
under a stream, each merge builds the whole index again, and without a rest the merges of a
growing account took a growing share of the machine. NULL (an index built before this
revision): no rest, as before.

Revision ID: 0022
Revises: 0021
"""

import sqlalchemy as sa
from alembic import op

revision: str = '0022'
down_revision: str | None = '0021'


def upgrade() -> None:
    op.add_column(
        'account_model_indexes', sa.Column('build_seconds', sa.Float(), nullable=True)
    )


def downgrade() -> None:
    op.drop_column('account_model_indexes', 'build_seconds')
