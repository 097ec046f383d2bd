"""Query.searchSessions: the account's sessions with passages like a described text."""

from __future__ import annotations

from typing import Annotated

import strawberry

from resolvers.arguments import DEFAULT_LIMIT, DEFAULT_MAX_MATCHES, SimilarArgs
from resolvers.context import Context
from resolvers.search import checked_text
from resolvers.sessions import search_list, search_sessions
from schema.budget import admit
from schema.selection import selects
from schema.similar import SessionSearch

_NAMES = {
    "limit": "limit",
    "max_matches_per_session": "maxMatchesPerSession",
    "window_days": "windowDays",
    "cursor": "after",
    "statuses": "status",
    "source_types": "sourceType",
}


@strawberry.type
class SearchQuery:
    @strawberry.field(
        description="The account's sessions with passages most like the text (an error, a "
        "failure described in words), ranked as a session's neighbours are. The text is "
        "embedded once with the account's configured model. Null, with an error, when "
        "refused (BAD_USER_INPUT, or LIMIT_EXCEEDED)."
    )
    async def search_sessions(
        self,
        info: strawberry.Info[Context, None],
        text: str,
        limit: int = DEFAULT_LIMIT,
        max_matches_per_session: int = DEFAULT_MAX_MATCHES,
        window_days: int | None = None,
        include_match_text: bool = True,
        after: str | None = None,
        status: Annotated[
            list[str] | None,
            strawberry.argument(description="Only sessions of these statuses (e.g. failed)."),
        ] = None,
        source_type: Annotated[
            list[str] | None,
            strawberry.argument(description="Only sessions of these source types."),
        ] = None,
    ) -> SessionSearch | None:
        admit(info)
        text = checked_text(text, "text")
        selected = selects(info.selected_fields, "searchSessions", "results", "matches", "text")
        args = SimilarArgs.checked(
            limit=limit,
            max_matches_per_session=max_matches_per_session,
            window_days=window_days,
            include_match_text=include_match_text and selected,
            cursor=after,
            names=_NAMES,
            ranked=search_list(info.context.principal.account_id, text),
            cursors=info.context.cursors,
            statuses=status,
            source_types=source_type,
        )
        result = await search_sessions(info.context, text, args)
        return SessionSearch.of(result)
