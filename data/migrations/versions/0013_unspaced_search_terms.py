"""search terms of every script: a chunk's words also as the character pairs of the scripts
written without spaces

PostgreSQL's parser reads a run of Chinese, Japanese, Thai, Lao, Khmer or Myanmar text as
one word, so "支付失败" inside a sentence matched nothing. `search_terms_of(text)` is the
English terms (stemmed, as before) and, under the `simple` configuration, the overlapping
character pairs of each such run (a lone character stands for itself): the pairs the lexical
model counts (indexer/lexical.py). A chunk's `search_terms` and a search text's terms are
both made by it. Changing the generated column rewrites session_chunks once.

Revision ID: 0013
Revises: 0012
"""

from alembic import op

revision: str = '0013'
down_revision: str | None = '0012'

# The characters of \\p{Han}, \\p{Hiragana}, \\p{Katakana}, \\p{Thai}, \\p{Lao}, \\p{Khmer} and
# \\p{Myanmar} (the blocks they are assigned in; the lexical model reads the same scripts).
UNSPACED = (
    '\u2e80-\u2fdf\u3005\u3007\u3021-\u3029\u3038-\u303b\u3400-\u4dbf\u4e00-\u9fff'
    '\uf900-\ufaff\U00020000-\U0002fa1f\u3041-\u309f\u30a0-\u30ff\u31f0-\u31ff\uff66-\uff9d'
    '\u0e01-\u0e5b\u0e81-\u0edf\u1780-\u17ff\u19e0-\u19ff\u1000-\u109f\ua9e0-\ua9ff\uaa60-\uaa7f'
)
PAIRS = f"""
CREATE FUNCTION unspaced_pairs(content text) RETURNS text
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE AS $$
  SELECT coalesce(string_agg(
           CASE WHEN char_length(m.run) = 1 THEN m.run ELSE substr(m.run, i, 2) END,
           ' ' ORDER BY m.n, i), '')
  FROM (SELECT r.found[1] AS run, r.n
        FROM regexp_matches(content, '[{UNSPACED}]+', 'g') WITH ORDINALITY AS r(found, n)) m
  CROSS JOIN LATERAL generate_series(1, greatest(char_length(m.run) - 1, 1)) AS i
$$"""
TERMS = """
CREATE FUNCTION search_terms_of(content text) RETURNS tsvector
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE AS $$
  SELECT to_tsvector('english'::regconfig, content)
         || to_tsvector('simple'::regconfig, unspaced_pairs(content))
$$"""


def _terms_column(expression: str) -> None:
    op.execute('DROP INDEX session_chunks_search_terms_idx')
    op.execute(
        'ALTER TABLE session_chunks DROP COLUMN search_terms, '
        f'ADD COLUMN search_terms tsvector GENERATED ALWAYS AS ({expression}) STORED'
    )
    op.execute(
        'CREATE INDEX session_chunks_search_terms_idx ON session_chunks '
        'USING gin (account_id, search_terms)'
    )


def upgrade() -> None:
    op.execute(PAIRS)
    op.execute(TERMS)
    _terms_column('search_terms_of(content)')


def downgrade() -> None:
    _terms_column("to_tsvector('english'::regconfig, content)")
    op.execute('DROP FUNCTION search_terms_of(text)')
    op.execute('DROP FUNCTION unspaced_pairs(text)')
