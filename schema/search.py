"""Query.searchSessions: the account's sessions with passages like a described text, and
the answer's types."""

from __future__ import annotations

from typing import Any

import strawberry

from resolvers.comparison.results import NeighbourResult, SearchResult
from resolvers.comparison.search import checked_text
from resolvers.context import Context
from resolvers.sessions import search_list, search_sessions
from resolvers.turns import TakesTurn
from schema.arguments import ranked_request, with_ranked_arguments
from schema.cost import Granted
from schema.mapping import from_result
from schema.sessions import RankedSession, ranked
from schema.similar import NEAREST, RankedAnswer, SearchLeg, SearchMatch, answer_fields


@strawberry.type
class SearchQuery:
    @strawberry.field(
        extensions=[Granted(), TakesTurn()],
        description="The account's sessions with passages most like the text (an error, a "
        "failure described in words): its words ranked by BM25 (the lexical leg) and, when "
        "the account has a dense model, its meaning by that model (the dense leg), the two "
        "rankings fused by reciprocal rank. Null, with an error, when refused "
        "(BAD_USER_INPUT, or LIMIT_EXCEEDED).",
    )
    @with_ranked_arguments
    async def search_sessions(
        self, info: strawberry.Info[Context, None], text: str, **ranked: Any
    ) -> SessionSearch | None:
        text = checked_text(text, "text")
        listed = search_list(info.context.principal.account_id, text)
        args, terms = ranked_request(info, ranked, "searchSessions", listed)
        result = await search_sessions(info.context, text, args, terms)
        return SessionSearch.of(result)


@strawberry.type(description="A session of the account with passages like the search text.")
class SearchNeighbour(RankedSession):
    matches: list[SearchMatch]

    @classmethod
    def of(cls, n: NeighbourResult) -> SearchNeighbour:
        return ranked(cls, n, [SearchMatch.of(m) for m in n.matches])


@strawberry.type(description="The account's sessions with passages like a described text.")
class SessionSearch(RankedAnswer):
    legs: list[SearchLeg] = strawberry.field(description="Each leg, and whether it ran.")
    results: list[SearchNeighbour]
    nearest: list[SearchNeighbour] = strawberry.field(description=NEAREST)

    @classmethod
    def of(cls, r: SearchResult) -> SessionSearch:
        legs = [SearchLeg.of(leg) for leg in r.legs]
        fields = answer_fields(r, SearchNeighbour.of)
        return from_result(cls, r, legs=legs, **fields)
