"""the kind of each HNSW index: `vector` (full precision, every index built until now) or
`halfvec` (half precision, every index built from now on), registered beside its name

A lookup orders by the expression of the kind its index has (data/model_indexes.py). The
indexes already built keep serving as `vector` until `similar-sessions move-indexes` builds
each again as `halfvec`, concurrently, and drops the old one (data/index_moves.py): this
migration changes no index, so it takes no time on a large table.

Revision ID: 0015
Revises: 0014
"""

from alembic import op

revision: str = '0015'
down_revision: str | None = '0014'

TABLES = ('embedding_models', 'account_model_indexes')


def upgrade() -> None:
    for table in TABLES:
        op.execute(
            f"ALTER TABLE {table} ADD COLUMN index_kind text NOT NULL DEFAULT 'vector' "
            f"CONSTRAINT {table}_index_kind CHECK (index_kind IN ('vector', 'halfvec'))"
        )


def downgrade() -> None:
    for table in TABLES:
        op.execute(f'ALTER TABLE {table} DROP COLUMN index_kind')
