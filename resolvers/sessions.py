"""The resolvers: a page of the account's sessions (GraphQL), and the comparison of one
session (the GraphQL field and the REST route both call it)."""

from __future__ import annotations

import contextlib
from dataclasses import replace
from typing import TypeVar
from uuid import UUID

from data.sessions import SessionRow, TitleSearch, recent_sessions
from resolvers.arguments import SimilarArgs, plain_text
from resolvers.comparison import search
from resolvers.comparison.results import SearchResult, SimilarResult
from resolvers.comparison.state import NOT_NARROWED
from resolvers.comparison.timeline import TimelineBucket, TimelineResult
from resolvers.context import Context
from resolvers.errors import BadArgument
from resolvers.shared_terms import pairs_of, with_terms
from values import credentials

MAX_PAGE = 100
Ranked = TypeVar("Ranked", SimilarResult, SearchResult)
MAX_SEARCH_CHARS = 200


async def similar_sessions(
    context: Context, session_id: UUID, args: SimilarArgs, terms: bool = False
) -> SimilarResult | None:
    """The comparison for one session of the caller's account; None when it has no such
    session. Its end cursor is sealed for this session's list with these arguments; with
    `terms` (and texts shown), each match has its shared terms."""
    result = await context.loaders.similar.load((session_id, args, NOT_NARROWED))
    if result is None:
        return result
    if terms and args.include_match_text:
        result = await _termed(context, result)
    if result.next_after is None:
        return result
    binding = args.binding(similar_list(session_id))
    return replace(result, end_cursor=context.cursors.ranked(result.next_after, binding))


async def similar_timeline(
    context: Context, session_id: UUID, args: SimilarArgs, bucket: TimelineBucket
) -> TimelineResult:
    """How many sessions matched the comparison's session, by bucket."""
    result = await context.loaders.timelines.load((session_id, args, bucket))
    assert result is not None, "asked only of a session the comparison found"
    return result


async def search_sessions(
    context: Context, text: str, args: SimilarArgs, terms: bool = False
) -> SearchResult:
    """The account's sessions nearest a described text (GraphQL and REST both call it); its
    end cursor is sealed for this text's list with these arguments; with `terms` (and texts
    shown), each match has the terms it shares with the text."""
    account_id = context.principal.account_id
    result = await search.search_sessions(context.services, account_id, text, args)
    if terms and args.include_match_text:
        result = await _termed(context, result, text)
    if result.next_after is None:
        return result
    binding = args.binding(search_list(context.principal.account_id, text))
    return replace(result, end_cursor=context.cursors.ranked(result.next_after, binding))


async def _termed(context: Context, result: Ranked, text: str | None = None) -> Ranked:
    """The answer with each match's shared terms, of its results and its nearest alike (one
    batch of the request's terms loader), and the fit they were chosen with."""
    listed = [*result.results, *result.nearest]
    answers = await context.loaders.terms.load_many(pairs_of(listed, text))
    shown, model = with_terms(listed, answers)
    cut = len(result.results)
    return replace(result, results=shown[:cut], nearest=shown[cut:], shared_terms_model=model)


def similar_list(session_id: UUID) -> tuple[str, str]:
    """What a session's neighbour list ranks (a cursor is bound to it)."""
    return ("similar", str(session_id))


def search_list(account_id: UUID, text: str) -> tuple[str, ...]:
    """What a search's list ranks: the account's sessions near the text (a cursor is bound to
    it, so another account's cursor for the same text does not open)."""
    return ("search", str(account_id), text)


def session_search(search: str | None) -> TitleSearch | None:
    """The search asked for, checked; None when there is nothing to search for."""
    if search is None or not search.strip():
        return None
    text = plain_text(search, "search", MAX_SEARCH_CHARS)
    ids = []
    for word in text.split():
        with contextlib.suppress(ValueError):
            ids.append(UUID(word))
    return TitleSearch(tuple(ids), text)


async def session_page(
    context: Context, first: int, after: str | None, search: str | None = None
) -> tuple[list[SessionRow], bool]:
    """Newest sessions first, keyset-paged by an opaque cursor, optionally searched."""
    if not 1 <= first <= MAX_PAGE:
        raise BadArgument("first", f"must be between 1 and {MAX_PAGE}, got {first}")
    account_id = context.principal.account_id
    position = None if after is None else context.cursors.open_sessions(after, account_id)
    searched = session_search(search)
    kept: list[SessionRow] = []
    async with context.services.read() as conn:
        while True:  # until the page is full: a row found only inside a credential is left out
            rows = await recent_sessions(conn, account_id, first, position, searched)
            more, rows = len(rows) > first, rows[:first]
            shown = rows if searched is None else [r for r in rows if found_as_shown(r, searched)]
            taken = shown[: first - len(kept)]
            kept += taken
            if len(kept) >= first or not more:
                more = more or len(shown) > len(taken)
                break
            position = (rows[-1].started_at, rows[-1].id)
    for row in kept:
        context.loaders.sessions.prime(row.id, row)
    return kept, more


def found_as_shown(row: SessionRow, searched: TitleSearch) -> bool:
    """Whether a session the search found still holds the text as the account is shown it:
    found only inside a masked credential of its title or source id, it would confirm a
    guessed secret (issue 59)."""
    text = searched.text.lower()
    return (
        row.id in searched.ids
        or text in credentials.shown(row.title).lower()
        or text in credentials.shown(row.source_id).lower()
    )
