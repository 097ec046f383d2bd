"""Search by describing what happened: the text is embedded once with the account's configured
model and looked up as a single probe, ranked by the same rule as a session's neighbours,
answered with the same degraded block."""

from __future__ import annotations

import time
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from uuid import UUID

from sqlalchemy.ext.asyncio import AsyncConnection

from data import comparison as sql
from data import comparison_details as details
from data.accounts import EmbeddingSetting, embedding_setting
from data.errors import ComparisonTimedOut
from data.lookups import Ask, Limits, Lookup, TextAnswer
from indexer.query import QueryNotEmbedded, embed_query
from resolvers.arguments import SimilarArgs, plain_text
from resolvers.comparison.answer import bands_of, elapsed_ms, neighbour_of
from resolvers.comparison.check_costs import begin_check
from resolvers.comparison.results import SearchResult
from resolvers.rules import ranking
from resolvers.rules.degraded import degraded
from resolvers.rules.lookup_path import vouches_for
from resolvers.services import Services

MAX_SEARCH_CHARS = 2000
NO_SESSION = UUID(int=0)  # a search text belongs to no session: every session is a candidate


def checked_text(text: str, name: str) -> str:
    """The search text, stripped; refused when empty or longer than the bound."""
    return plain_text(text, name, MAX_SEARCH_CHARS)


@dataclass(frozen=True, slots=True)
class Search:
    """One search while it runs: the text's ask, its arguments, the reasons it already has."""

    account_id: UUID
    ask: Ask
    args: SimilarArgs
    reasons: frozenset[str]
    started: float


async def search_sessions(
    services: Services, account_id: UUID, text: str, args: SimilarArgs
) -> SearchResult:
    """The account's sessions nearest the text (already checked)."""
    now = datetime.now(UTC)
    cutoff = None if args.window_days is None else now - timedelta(days=args.window_days)
    asked = {"similar_window_applied"} if args.window_days is not None else set()
    asked |= {"similar_filter_applied"} if args.filtered else set()
    ask = Ask(0, NO_SESSION, cutoff, args.statuses, args.source_types)
    search = Search(account_id, ask, args, frozenset(asked), time.perf_counter())
    async with services.engine.connect() as conn:
        setting = await embedding_setting(conn, account_id)
    refused = _refusal(services, setting)
    if refused or setting is None:
        return _empty(search, None, refused)
    try:
        vector = await embed_query(
            services.engine, services.embedders, account_id, setting, text, now
        )
    except QueryNotEmbedded as exc:
        return _empty(search, str(setting.identity), exc.reasons)
    async with sql.reading(services.comparison_engine) as conn:
        return await _look_up(conn, services, search, setting, vector)


def _refusal(services: Services, setting: EmbeddingSetting | None) -> frozenset[str]:
    if not services.tuning.embeddings_enabled:
        return frozenset({"semantic_disabled_by_deployment", "search_text_not_embedded"})
    if setting is None or not setting.enabled:
        return frozenset({"semantic_not_enabled", "search_text_not_embedded"})
    return frozenset()


async def _look_up(
    conn: AsyncConnection,
    services: Services,
    search: Search,
    setting: EmbeddingSetting,
    vector: str,
) -> SearchResult:
    tuning, identity = services.tuning, setting.identity
    limits = tuning.limits
    try:
        with sql.within_budget():
            await sql.ensure_configured(conn, tuning.comparison_settings)
            looked = await sql.look_up_text(
                conn, search.account_id, identity, vector, search.ask, limits
            )
            if not _vouched(looked, tuning.limits):
                exact = await _checked(conn, services, search, setting, vector)
                if exact is None:
                    search = _with(search, "similar_approximate_unverified")
                else:
                    looked = TextAnswer(looked.path, exact)
    except ComparisonTimedOut:
        return _empty(search, str(identity), frozenset({"similar_comparison_timed_out"}))
    return await _answer(conn, search, str(identity), looked)


async def _checked(
    conn: AsyncConnection,
    services: Services,
    search: Search,
    setting: EmbeddingSetting,
    vector: str,
) -> Lookup | None:
    """The text's lookup by an exact pass within the check's budget; None past it, or when
    the account's last checks predict it would run past it."""
    budget_ms = services.tuning.verify_budget_ms
    clock = (
        None if budget_ms <= 0 else begin_check(services.checks, search.account_id, 1, budget_ms)
    )
    if clock is None:
        return None
    exact: TextAnswer | None = None
    async with sql.own_budget(conn, budget_ms):
        exact = await sql.look_up_text(
            conn,
            search.account_id,
            setting.identity,
            vector,
            search.ask,
            services.tuning.limits,
            True,
        )
    clock.end(finished=exact is not None)
    return None if exact is None else exact.answer


def _vouched(looked: TextAnswer, limits: Limits) -> bool:
    """Whether the text's lookup needs no exact check: it took the exact path, or its
    approximate window vouches for its answer."""
    if not looked.path.path.approximate:
        return True
    return vouches_for(looked.answer.window, limits.window, limits.per_probe)


async def _answer(
    conn: AsyncConnection, search: Search, model: str, looked: TextAnswer
) -> SearchResult:
    """Rank the text's hits and read what the page shows (the comparison's second
    statement, which also says whether anything of the model was comparable)."""
    args, hits = search.args, looked.answer.hits  # one probe: probe 0
    neighbours = ranking.rank_neighbours(hits, args.max_matches_per_session)
    page, more = ranking.page_after(neighbours, args.after, args.limit)
    chunk_ids = [m.chunk_id for n in page for m in n.matches]
    lonely = [] if hits else [details.Hitless(search.ask, model)]
    shown = await details.show(
        conn,
        search.account_id,
        chunk_ids,
        chunk_ids if args.include_match_text else [],
        [n.session_id for n in page],
        lonely,
        ranking.SIMILAR_PREVIEW_CHARS,
    )
    if not hits and not any(shown.comparable):
        search = _with(search, "similar_no_comparable_sessions")
    cuts = bands_of(model)
    return SearchResult(
        model_identity=model,
        args=args,
        degraded=degraded(True, set(search.reasons), args.window_days),
        elapsed_ms=elapsed_ms(search.started),
        results=tuple(neighbour_of(n, shown, args, None, cuts) for n in page),
        next_after=page[-1].sort_key if more and page else None,
        lookup_path=looked.path.path,
        bands=cuts,
    )


def _with(search: Search, reason: str) -> Search:
    return Search(
        search.account_id, search.ask, search.args, search.reasons | {reason}, search.started
    )


def _empty(search: Search, model: str | None, reasons: frozenset[str]) -> SearchResult:
    args = search.args
    return SearchResult(
        model_identity=model,
        args=args,
        degraded=degraded(False, set(search.reasons | reasons), args.window_days),
        elapsed_ms=elapsed_ms(search.started),
        results=(),
        next_after=None,
        lookup_path=None,
        bands=bands_of(model),
    )
