"""next fit: a lexical refit's vectors embedded beside the served ones, then swapped in

A new lexical fit used to be installed at once: every passage of the account lost its vector
and waited to be embedded again, and for the minutes that took (168 s for 28,000 passages
beside a stream) a session not yet embedded again listed nobody. Now `index --watch` stages
the new fit (lexical_fits.next_*) and embeds the account's passages under it into a slot of
their own (session_chunks.next_*), while every comparison reads the served fit's vectors;
once none waits, one transaction swaps them in (indexer/fitting.py, data/fits.py). The slot
is NULL outside a refit. Its waiting chunks have an index of their own, as each slot does.

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
        'ALTER TABLE session_chunks '
        'ADD COLUMN next_embedding vector, ADD COLUMN next_model text, '
        'ADD COLUMN next_state text '
        f'CONSTRAINT session_chunks_next_state_check CHECK (next_state IN {STATES}), '
        'ADD COLUMN next_embedded_at timestamptz '
        'CONSTRAINT session_chunks_next_embedded_at_in_range_check '
        f'CHECK (next_embedded_at BETWEEN {RANGE}), '
        'ADD COLUMN next_attempts integer NOT NULL DEFAULT 0, ADD COLUMN next_error text, '
        'ADD CONSTRAINT session_chunks_next_has_vector_check CHECK ('
        "next_state <> 'embedded' OR (next_embedding IS NOT NULL AND next_model IS NOT NULL))"
    )
    op.execute(
        'CREATE INDEX session_chunks_next_work_idx ON session_chunks (account_id, next_state) '
        "WHERE next_state IN ('pending', 'in_progress')"
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
    op.execute('DROP INDEX session_chunks_next_work_idx')
    op.execute(
        'ALTER TABLE session_chunks DROP CONSTRAINT session_chunks_next_has_vector_check, '
        'DROP COLUMN next_embedding, DROP COLUMN next_model, DROP COLUMN next_state, '
        'DROP COLUMN next_embedded_at, DROP COLUMN next_attempts, DROP COLUMN next_error'
    )
