"""The comparison's second statement: what the answers show (the matches' and probes'
details, the neighbour sessions) and, for comparisons without a hit, whether anything else
of their model was comparable at all."""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, fields
from datetime import datetime
from typing import Any
from uuid import UUID

from sqlalchemy.ext.asyncio import AsyncConnection

from data.comparison import session_of
from data.engine import json_statement
from data.exact_lookup import Asked, in_window, session_accepted
from data.lookups import Ask
from data.sessions import SessionRow

# How far past a preview's end the content is read, so that a credential across the end is
# recognised whole (a 4096-bit RSA key's block is about 3,200 characters).
CREDENTIAL_CHARS = 4000


@dataclass(frozen=True, slots=True)
class ChunkDetail:
    """A passage (chunk) as the answers show it; `text` is its preview, when it was read."""

    document_id: UUID
    runtime_session_id: UUID
    source_kind: str
    source_id: UUID | None
    chunk_index: int
    occurred_at: datetime
    role: str | None
    redaction_state: str
    text: str | None
    replay_anchor: UUID | None  # the replay turn it came from, when source_id names one
    # The words of `text` a search text's terms matched (stemmed as the lexical leg stems),
    # lowercased, each once; empty unless a search's text was shown.
    matched_words: tuple[str, ...]


_CHUNK_FIELDS = tuple(f.name for f in fields(ChunkDetail))


@dataclass(frozen=True, slots=True)
class Hitless:
    """A comparison that found no hit (its ask, and the model it compared in): is anything
    else of that model comparable at all?"""

    ask: Ask
    model: str

    def as_json(self, key: int) -> dict[str, Any]:
        return {**self.ask.as_json(), "key": key, "model": self.model}


@dataclass(frozen=True)
class PageDetails:
    """What the second statement read: the shown chunks, the neighbour sessions, and for
    each lonely comparison asked (in that order) whether it had something comparable."""

    chunks: dict[UUID, ChunkDetail] = field(default_factory=dict)
    sessions: dict[UUID, SessionRow] = field(default_factory=dict)
    comparable: tuple[bool, ...] = ()


# What a lonely comparison asked, as its row carries it: its window, statuses and source types
# (its row has no start, so the check reads none).
_LONELY = Asked.of_row("l")
SHOW = (
    """
WITH lonely AS (
  SELECT * FROM jsonb_to_recordset(CAST(:lonely AS jsonb)) AS l(key int, session_id uuid,
    model text, cutoff timestamptz, statuses text[], source_types text[]))
SELECT 'chunk' AS kind, NULL::int AS key, c.id, c.runtime_session_id, c.source_kind,
       c.source_id, c.chunk_index, c.occurred_at, c.role, c.redaction_state, {text},
       a.id AS anchor, {words} AS words, NULL::jsonb AS session
FROM session_chunks c LEFT JOIN runtime_session_activity a
  ON a.account_id = c.account_id AND a.id = c.source_id
  AND a.runtime_session_id = c.runtime_session_id
WHERE c.account_id = :account_id AND c.id = ANY(CAST(:chunk_ids AS uuid[]))
UNION ALL
SELECT 'session', NULL, s.id, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL,
       jsonb_build_object('id', s.id, 'title', s.title, 'source_type', s.source_type,
         'source_id', s.source_id, 'reference', s.reference, 'status', s.status,
         'started_at', s.started_at, 'last_activity_at', s.last_activity_at)
FROM runtime_sessions s
WHERE s.account_id = :account_id AND s.id = ANY(CAST(:session_ids AS uuid[]))
UNION ALL
SELECT 'comparable', l.key, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL,
       NULL
FROM lonely l CROSS JOIN LATERAL (
  SELECT 1 FROM session_chunks c
  JOIN runtime_sessions s ON s.account_id = c.account_id AND s.id = c.runtime_session_id
  WHERE c.account_id = :account_id AND c.embedding_model = l.model
    AND c.redaction_state = 'clear' AND c.embedding_state = 'embedded'
    AND c.runtime_session_id <> l.session_id
    AND """
    + f"{in_window(_LONELY)} AND {session_accepted(_LONELY, started=False)}"
    + """
  ORDER BY c.runtime_session_id LIMIT 1) AS one"""
)


def _matched_words(preview: str) -> str:
    """The preview's words whose stem is one of the search text's terms (:search_text)."""
    terms = (
        "(SELECT string_agg(quote_literal(u.lexeme), ' | ')::tsquery "
        "FROM unnest(search_terms_of(CAST(:search_text AS text))) AS u)"
    )
    return (
        f"ARRAY(SELECT DISTINCT lower(w) FROM regexp_split_to_table({preview}, "
        "'[^[:alnum:]_]+') AS w WHERE w <> '' "
        f"AND search_terms_of(w) @@ {terms} ORDER BY 1)"
    )


def _preview(preview_chars: int) -> str:
    """The content's preview for chunks in :text_ids; no content column is named without."""
    limit = int(preview_chars)
    return (
        "CASE WHEN NOT c.id = ANY(CAST(:text_ids AS uuid[])) THEN NULL "
        f"WHEN char_length(c.content) > {limit} THEN left(c.content, {limit - 1}) || '…' "
        "ELSE c.content END"
    )


def _read(preview_chars: int) -> str:
    """The content for chunks in :text_ids, up to CREDENTIAL_CHARS past the preview: a
    credential across the preview's end is masked whole before the text is cut."""
    return (
        "CASE WHEN c.id = ANY(CAST(:text_ids AS uuid[])) "
        f"THEN left(c.content, {int(preview_chars) + CREDENTIAL_CHARS}) END"
    )


def _previewed(text: str, preview_chars: int, shown: Callable[[str], str]) -> str:
    """The text as it is shown (`shown`: its credentials masked unless the account shows
    them), cut to the preview as `_preview` cuts it in SQL."""
    text = shown(text)
    return text if len(text) <= preview_chars else text[: preview_chars - 1] + "…"


def _shown_words(words: tuple[str, ...], text: str) -> tuple[str, ...]:
    """The matched words still in the shown text: none from inside a masked credential."""
    if not words:
        return words
    present = set(_WORD.split(text.lower()))
    return tuple(w for w in words if w in present)


_WORD = re.compile(r"[^\w]+")  # PostgreSQL's [^[:alnum:]_]+, which split the words


async def show(
    conn: AsyncConnection,
    account_id: UUID,
    chunk_ids: Sequence[UUID],
    text_ids: Sequence[UUID],
    session_ids: Sequence[UUID],
    lonely: Sequence[Hitless],
    preview_chars: int,
    shown: Callable[[str], str],
    search_text: str | None = None,
) -> PageDetails:
    """The comparison's second statement; none when there is nothing to show or ask. Each
    passage's text as `shown` shows it (values/credentials.py), and with a search's text,
    the words of its preview the text matched."""
    if not (chunk_ids or session_ids or lonely):
        return PageDetails()
    text = _read(preview_chars) if text_ids else "NULL::text"
    words = _matched_words(_preview(preview_chars)) if text_ids and search_text else "NULL::text[]"
    params: dict[str, Any] = {
        "account_id": account_id,
        "chunk_ids": sorted(set(chunk_ids) | set(text_ids)),
        "session_ids": sorted(set(session_ids)),
        "lonely": json.dumps([item.as_json(n) for n, item in enumerate(lonely)]),
    }
    if text_ids:
        params["text_ids"] = sorted(set(text_ids))
    if text_ids and search_text:
        params["search_text"] = search_text
    statement = SHOW.format(text=text, words=words)
    rows = await conn.execute(json_statement(statement, "session"), params)
    chunks, sessions, comparable = {}, {}, set()
    for row in rows:
        kind, key, session = row[0], row[1], row[-1]
        if kind == "chunk":
            values = dict(zip(_CHUNK_FIELDS, row[2:-1], strict=True))
            matched: tuple[str, ...] = tuple(values["matched_words"] or ())
            if values["text"] is not None:
                values["text"] = _previewed(values["text"], preview_chars, shown)
                matched = _shown_words(matched, values["text"])
            values["matched_words"] = matched
            detail = ChunkDetail(**values)
            chunks[detail.document_id] = detail
        elif kind == "session":
            neighbour = session_of(session)
            sessions[neighbour.id] = neighbour
        else:
            comparable.add(key)
    return PageDetails(chunks, sessions, tuple(n in comparable for n in range(len(lonely))))
