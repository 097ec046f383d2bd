"""own index tails: session_chunks.written_seq and account_model_indexes.watermark

Every chunk row written from this revision on takes the next number of one sequence
(`written_seq`); an account's own index built from now on holds its comparable rows numbered
up to the index's `watermark` (its predicate says so), and the rows written after it (the
tail) are looked up exactly beside it until a merge builds the index again over all of them
(data/account_indexes.py, issue #29). Rows written before this revision have no number and
count as below every watermark; an index registered before it (watermark NULL) holds every
row, as before, until it is next built.

Revision ID: 0012
Revises: 0011
"""

import sqlalchemy as sa
from alembic import op

revision: str = '0012'
down_revision: str | None = '0011'


def upgrade() -> None:
    op.execute('CREATE SEQUENCE session_chunks_written_seq AS bigint')
    # added without a default, then given one: no rewrite of the table, old rows NULL
    op.add_column('session_chunks', sa.Column('written_seq', sa.BigInteger(), nullable=True))
    op.execute(
        'ALTER TABLE session_chunks ALTER COLUMN written_seq '
        "SET DEFAULT nextval('session_chunks_written_seq')"
    )
    op.execute('ALTER SEQUENCE session_chunks_written_seq OWNED BY session_chunks.written_seq')
    op.create_index(
        'session_chunks_written_idx',
        'session_chunks',
        ['account_id', 'written_seq'],
        postgresql_where=sa.text('written_seq IS NOT NULL'),
    )
    op.add_column('account_model_indexes', sa.Column('watermark', sa.BigInteger(), nullable=True))


def downgrade() -> None:
    op.drop_column('account_model_indexes', 'watermark')
    op.drop_index('session_chunks_written_idx', table_name='session_chunks')
    op.drop_column('session_chunks', 'written_seq')
