"""search terms without credentials: a passage's search words leave its credentials out

`search_terms` was generated from the content, so a credential's words were search words: a
search for a bare guess (`hunter2`, an AWS key in lower case) found the passage whose shown
text has it masked, and confirmed the guess (issue 59). A generated column can only read
the row, and credentials are recognised in Python (values/credentials.py), so the column
becomes a plain one that the indexer's chunk writes and the import fill with
`search_terms_of(<the content with its credentials left out>)`.

The passages already written get their words here, in batches of BATCH, with a progress bar
on a terminal; the GIN index is built once they all have. The downgrade generates the
column from the content again.

Revision ID: 0021
Revises: 0020
"""

import sqlalchemy as sa
from alembic import op
from tqdm import tqdm

from values.credentials import without

revision: str = '0021'
down_revision: str | None = '0020'

BATCH = 2_000
_INDEX = (
    'CREATE INDEX session_chunks_search_terms_idx ON session_chunks '
    'USING gin (account_id, search_terms)'
)
_NEXT = sa.text(
    'SELECT account_id, id, content FROM session_chunks '
    'WHERE (account_id, id) > (CAST(:a AS uuid), CAST(:i AS uuid)) '
    'ORDER BY account_id, id LIMIT :n'
)
_FILL = sa.text(
    'UPDATE session_chunks c SET search_terms = search_terms_of(v.searchable) '
    'FROM unnest(CAST(:a AS uuid[]), CAST(:i AS uuid[]), CAST(:t AS text[])) '
    'AS v(account_id, id, searchable) '
    'WHERE c.account_id = v.account_id AND c.id = v.id'
)
_FIRST = '00000000-0000-0000-0000-000000000000'


def upgrade() -> None:
    op.execute('DROP INDEX session_chunks_search_terms_idx')
    op.execute('ALTER TABLE session_chunks DROP COLUMN search_terms')
    op.execute('ALTER TABLE session_chunks ADD COLUMN search_terms tsvector')
    conn = op.get_bind()
    total = conn.execute(sa.text('SELECT count(*) FROM session_chunks')).scalar_one()
    last = (_FIRST, _FIRST)
    with tqdm(total=total, desc='search words', unit='passage', disable=None) as bar:
        while rows := conn.execute(_NEXT, {'a': last[0], 'i': last[1], 'n': BATCH}).all():
            conn.execute(
                _FILL,
                {
                    'a': [r.account_id for r in rows],
                    'i': [r.id for r in rows],
                    't': [without(r.content) for r in rows],
                },
            )
            last = (str(rows[-1].account_id), str(rows[-1].id))
            bar.update(len(rows))
    op.execute(_INDEX)


def downgrade() -> None:
    op.execute('DROP INDEX session_chunks_search_terms_idx')
    op.execute(
        'ALTER TABLE session_chunks DROP COLUMN search_terms, ADD COLUMN search_terms tsvector '
        'GENERATED ALWAYS AS (search_terms_of(content)) STORED'
    )
    op.execute(_INDEX)
