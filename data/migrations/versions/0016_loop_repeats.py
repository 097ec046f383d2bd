"""loop repeats: session_chunks.repeat_of, the chunk of the same session and model whose vector
a chunk repeats, kept out of every HNSW index and expanded back by the lookups

A session that repeats one turn thousands of times holds thousands of identical vectors; in
an HNSW graph they are a clump that strands the points near it (the 1M benchmark's loop).
From this revision a chunk whose vector equals an earlier chunk's of its session and model
names that chunk, its representative, in `repeat_of`; the indexes built from now on leave it
out (their predicates say `repeat_of IS NULL`), and a lookup that finds the representative
adds its repeats at its distance (data/repeats.py, data/probe_lookups_sql.py).

A mark is only ever right or absent: the triggers below clear it the moment the chunk's or
its representative's vector, model, state or redaction changes, or the representative is
deleted, so that no repeat ever stands at a distance it does not have. An unmarked repeat
stands in the graph as itself, as every chunk did before. The rows already written are
marked here; the indexes already built keep their predicate (a lookup's `repeat_of IS NULL`
is narrower, so they still serve it) until they are next built.

Revision ID: 0016
Revises: 0015
"""

import sqlalchemy as sa
from alembic import op

revision: str = '0016'
down_revision: str | None = '0015'

# What a chunk's mark rests on: a change to any of them makes it no longer a repeat of
# anything (or, for a representative, no longer the vector its repeats stand for).
_CHANGED = (
    'NEW.embedding IS DISTINCT FROM OLD.embedding '
    'OR NEW.embedding_model IS DISTINCT FROM OLD.embedding_model '
    'OR NEW.embedding_state IS DISTINCT FROM OLD.embedding_state '
    'OR NEW.redaction_state IS DISTINCT FROM OLD.redaction_state '
    'OR NEW.runtime_session_id IS DISTINCT FROM OLD.runtime_session_id'
)


def upgrade() -> None:
    op.add_column('session_chunks', sa.Column('repeat_of', sa.Uuid(), nullable=True))
    # on a representative, when its latest repeat occurred: a lookup within `windowDays`
    # keeps it as a candidate while a repeat of it is within the window
    op.add_column(
        'session_chunks', sa.Column('repeats_until', sa.DateTime(timezone=True), nullable=True)
    )
    op.create_index(
        'session_chunks_repeats_idx',
        'session_chunks',
        ['account_id', 'repeat_of', 'id'],
        postgresql_where=sa.text('repeat_of IS NOT NULL'),
    )
    # a repeat whose own vector, model, state, redaction or time changes is a repeat no
    # longer (its time is in its representative's repeats_until)
    op.execute(
        'CREATE FUNCTION session_chunks_unmark() RETURNS trigger LANGUAGE plpgsql AS $$ '
        'BEGIN NEW.repeat_of := NULL; RETURN NEW; END $$'
    )
    op.execute(
        'CREATE TRIGGER session_chunks_unmark BEFORE UPDATE ON session_chunks FOR EACH ROW '
        f'WHEN (NEW.repeat_of IS NOT NULL AND ({_CHANGED} '
        'OR NEW.occurred_at IS DISTINCT FROM OLD.occurred_at)) '
        'EXECUTE FUNCTION session_chunks_unmark()'
    )
    # the repeats of a representative that changes or goes stand as themselves again (after
    # the statement: a repeat it also updates has then been updated already)
    op.execute(
        'CREATE FUNCTION session_chunks_unmark_repeats() RETURNS trigger LANGUAGE plpgsql AS $$ '
        'BEGIN UPDATE session_chunks SET repeat_of = NULL '
        'WHERE account_id = OLD.account_id AND repeat_of = OLD.id; RETURN NULL; END $$'
    )
    op.execute(
        'CREATE TRIGGER session_chunks_representative_changed AFTER UPDATE ON session_chunks '
        f'FOR EACH ROW WHEN (OLD.repeat_of IS NULL AND ({_CHANGED})) '
        'EXECUTE FUNCTION session_chunks_unmark_repeats()'
    )
    op.execute(
        'CREATE TRIGGER session_chunks_representative_deleted AFTER DELETE ON session_chunks '
        "FOR EACH ROW WHEN (OLD.repeat_of IS NULL AND OLD.embedding_state = 'embedded') "
        'EXECUTE FUNCTION session_chunks_unmark_repeats()'
    )
    # the rows already written, marked as data/repeats.py marks them (written out here: a
    # migration does not change with the code after it)
    op.execute(
        'WITH g AS (SELECT c.account_id, c.id, first_value(c.id) OVER w AS representative, '
        'max(c.occurred_at) OVER (PARTITION BY c.account_id, c.runtime_session_id, '
        'c.embedding_model, c.embedding) AS latest, count(*) OVER (PARTITION BY c.account_id, '
        'c.runtime_session_id, c.embedding_model, c.embedding) AS n FROM session_chunks c '
        "WHERE c.redaction_state = 'clear' AND c.embedding_state = 'embedded' "
        'WINDOW w AS (PARTITION BY c.account_id, c.runtime_session_id, c.embedding_model, '
        'c.embedding ORDER BY c.written_seq NULLS FIRST, c.id)) '
        'UPDATE session_chunks c SET repeat_of = nullif(g.representative, g.id), '
        'repeats_until = CASE WHEN g.representative = g.id THEN g.latest END '
        'FROM g WHERE c.account_id = g.account_id AND c.id = g.id AND g.n > 1'
    )


def downgrade() -> None:
    op.execute('DROP TRIGGER session_chunks_representative_deleted ON session_chunks')
    op.execute('DROP TRIGGER session_chunks_representative_changed ON session_chunks')
    op.execute('DROP TRIGGER session_chunks_unmark ON session_chunks')
    op.execute('DROP FUNCTION session_chunks_unmark_repeats()')
    op.execute('DROP FUNCTION session_chunks_unmark()')
    op.drop_index('session_chunks_repeats_idx', table_name='session_chunks')
    op.drop_column('session_chunks', 'repeats_until')
    op.drop_column('session_chunks', 'repeat_of')
