"""next fit: a lexical refit's vectors embedded beside the served ones, then swapped in

A new lexical fit used to be installed at once: every passage of the account lost its vector
and waited to be embedded again, and for the minutes that took (168 s for 28,000 passages
beside a stream) a session not yet embedded again listed nobody. Now `index --watch` stages
the new fit (lexical_fits.next_*) and embeds the account's passages under it into a table of
their own (session_chunk_next: a passage's staged vector, state, attempts and error, the
hash of the text it was made of, and its chunk's write number, by which the newest are
claimed first), while every comparison reads the served fit's vectors;
once none waits, one transaction swaps them in (indexer/staged.py, data/next_fits.py) and
empties the table of the account. Kept apart from session_chunks: an update of a chunk row
inserts it again into every HNSW graph its served vector is in.

Revision ID: 0023
Revises: 0022
"""

from alembic import op

revision: str = '0023'
down_revision: str | None = '0022'

STATES = "('pending', 'in_progress', 'embedded', 'skipped', 'failed')"
RANGE = (
    "'0001-01-01 00:00:00+00'::timestamptz AND '9999-12-31 23:59:59.999999+00'::timestamptz"
)


def upgrade() -> None:
    op.execute(
        'CREATE TABLE session_chunk_next ('
        'account_id uuid NOT NULL, chunk_id uuid NOT NULL, '
        "state text NOT NULL DEFAULT 'pending' "
        f'CONSTRAINT session_chunk_next_state_check CHECK (state IN {STATES}), '
        'embedding vector, model text, content_hash bytea, written_seq bigint, '
        'embedded_at timestamptz CONSTRAINT session_chunk_next_embedded_at_in_range_check '
        f'CHECK (embedded_at BETWEEN {RANGE}), '
        'attempts integer NOT NULL DEFAULT 0, error text, '
        'CONSTRAINT session_chunk_next_pkey PRIMARY KEY (account_id, chunk_id), '
        'CONSTRAINT session_chunk_next_has_vector_check CHECK ('
        "state <> 'embedded' OR (embedding IS NOT NULL AND model IS NOT NULL)))"
    )
    op.execute(
        'CREATE INDEX session_chunk_next_waiting_idx ON session_chunk_next '
        "(account_id, written_seq DESC NULLS LAST, chunk_id) WHERE state = 'pending'"
    )
    op.execute(
        'ALTER TABLE lexical_fits ADD COLUMN next_identity text, '
        'ADD COLUMN next_sessions integer, ADD COLUMN next_weights bytea, '
        'ADD COLUMN next_fitted_at timestamptz, '
        'ADD CONSTRAINT lexical_fits_next_check CHECK ('
        '(next_identity IS NULL) = (next_weights IS NULL) '
        'AND (next_identity IS NULL) = (next_sessions IS NULL) '
        'AND (next_identity IS NULL) = (next_fitted_at IS NULL))'
    )


def downgrade() -> None:
    op.execute(
        'ALTER TABLE lexical_fits DROP CONSTRAINT lexical_fits_next_check, '
        'DROP COLUMN next_identity, DROP COLUMN next_sessions, DROP COLUMN next_weights, '
        'DROP COLUMN next_fitted_at'
    )
    op.execute('DROP TABLE session_chunk_next')
