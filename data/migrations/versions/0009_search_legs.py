"""the two legs of a search: the words of every chunk (a tsvector, for the lexical leg's BM25)
and a second vector per chunk for an account's dense model beside its configured one

`search_terms` is generated from the content (English stemming, PostgreSQL's full-text search)
and indexed by account (btree_gin), so a search reads the account's matching chunks only.
The dense vector has its own state, attempts and error, like the configured model's; an
account names its dense model in its embedding setting. Adding the generated column rewrites
session_chunks once.

Revision ID: 0009
Revises: 0008
"""

from alembic import op

revision: str = '0009'
down_revision: str | None = '0008'

STATES = "('pending', 'skipped', 'in_progress', 'embedded', 'failed')"
RANGE = (
    "'0001-01-01 00:00:00+00'::timestamptz AND '9999-12-31 23:59:59.999999+00'::timestamptz"
)


def upgrade() -> None:
    op.execute('CREATE EXTENSION IF NOT EXISTS btree_gin')
    op.execute(
        'ALTER TABLE session_chunks '
        "ADD COLUMN search_terms tsvector GENERATED ALWAYS AS "
        "(to_tsvector('english'::regconfig, content)) STORED, "
        'ADD COLUMN dense_embedding vector, ADD COLUMN dense_model text, '
        "ADD COLUMN dense_state text NOT NULL DEFAULT 'pending' "
        f'CONSTRAINT session_chunks_dense_state_check CHECK (dense_state IN {STATES}), '
        'ADD COLUMN dense_embedded_at timestamptz '
        f'CONSTRAINT session_chunks_dense_embedded_at_in_range_check '
        f'CHECK (dense_embedded_at BETWEEN {RANGE}), '
        'ADD COLUMN dense_attempts integer NOT NULL DEFAULT 0, ADD COLUMN dense_error text, '
        'ADD CONSTRAINT session_chunks_dense_has_vector_check CHECK ('
        "dense_state <> 'embedded' OR (dense_embedding IS NOT NULL AND dense_model IS NOT NULL))"
    )
    op.execute('ALTER TABLE session_chunks ALTER COLUMN dense_embedding SET STORAGE MAIN')
    op.execute(
        'CREATE INDEX session_chunks_search_terms_idx ON session_chunks '
        'USING gin (account_id, search_terms)'
    )
    op.execute(
        'CREATE INDEX session_chunks_dense_work_idx ON session_chunks (account_id, dense_state) '
        "WHERE dense_state IN ('pending', 'in_progress')"
    )
    op.execute(
        'ALTER TABLE embedding_settings ADD COLUMN dense_provider text, '
        'ADD COLUMN dense_model text, ADD COLUMN dense_dimensions integer, '
        'ADD CONSTRAINT embedding_settings_dense_check CHECK ('
        '(dense_provider IS NULL) = (dense_model IS NULL) '
        'AND (dense_model IS NULL) = (dense_dimensions IS NULL)), '
        "ADD COLUMN dense_identity text GENERATED ALWAYS AS "
        "(dense_provider || ':' || dense_model || '@' || dense_dimensions::text) STORED"
    )


def downgrade() -> None:
    op.execute(
        'ALTER TABLE embedding_settings DROP COLUMN dense_identity, '
        'DROP CONSTRAINT embedding_settings_dense_check, DROP COLUMN dense_dimensions, '
        'DROP COLUMN dense_model, DROP COLUMN dense_provider'
    )
    op.execute('DROP INDEX session_chunks_dense_work_idx')
    op.execute('DROP INDEX session_chunks_search_terms_idx')
    op.execute(
        'ALTER TABLE session_chunks DROP CONSTRAINT session_chunks_dense_has_vector_check, '
        'DROP COLUMN dense_error, DROP COLUMN dense_attempts, DROP COLUMN dense_embedded_at, '
        'DROP COLUMN dense_state, DROP COLUMN dense_model, DROP COLUMN dense_embedding, '
        'DROP COLUMN search_terms'
    )
