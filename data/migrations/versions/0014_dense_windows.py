"""the dense model's windows: a passage longer than the dense model reads keeps the vector of
each window it was cut into, beside their average

A search's dense leg scores a passage by its best window (data/probe_lookups_sql.py), so a
window that says what the text says is not blurred by the rest of its passage. Only
passages of more than one window have rows; a passage of one window is its own vector.

Revision ID: 0014
Revises: 0013
"""

from alembic import op

revision: str = '0014'
down_revision: str | None = '0013'


def upgrade() -> None:
    op.execute(
        'CREATE TABLE session_chunk_windows ('
        'account_id uuid NOT NULL, chunk_id uuid NOT NULL, window_index integer NOT NULL, '
        'embedding vector NOT NULL, '
        'PRIMARY KEY (account_id, chunk_id, window_index), '
        'FOREIGN KEY (account_id, chunk_id) REFERENCES session_chunks (account_id, id) '
        'ON DELETE CASCADE)'
    )
    op.execute('ALTER TABLE session_chunk_windows ALTER COLUMN embedding SET STORAGE MAIN')


def downgrade() -> None:
    op.execute('DROP TABLE session_chunk_windows')
