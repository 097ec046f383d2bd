"""fitted ef_search: account_model_indexes.ef_search and ef_fit

The hnsw.ef_search an account's own index is searched with, measured on the account's own
vectors after the index is built (data/ef_fits.py, issue #29), and what the measurement
found. NULL: the configured ef_search, as before; an index built before this revision is
fitted by `similar-sessions fit-indexes` or when it is next built.

Revision ID: 0011
Revises: 0010
"""

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision: str = '0011'
down_revision: str | None = '0010'


def upgrade() -> None:
    op.add_column('account_model_indexes', sa.Column('ef_search', sa.Integer(), nullable=True))
    op.add_column(
        'account_model_indexes',
        sa.Column('ef_fit', postgresql.JSONB(astext_type=sa.Text()), nullable=True),
    )
    op.execute(
        'ALTER TABLE account_model_indexes ADD CONSTRAINT account_model_indexes_ef_search_check '
        'CHECK (ef_search BETWEEN 10 AND 1000)'
    )


def downgrade() -> None:
    op.execute('ALTER TABLE account_model_indexes DROP CONSTRAINT account_model_indexes_ef_search_check')
    op.drop_column('account_model_indexes', 'ef_fit')
    op.drop_column('account_model_indexes', 'ef_search')
