"""Search by describing what happened: the text is embedded once with the account's configured
model and looked up as a single probe, ranked by the same rule as a session's neighbours,
answered with the same degraded block."""

from __future__ import annotations

import time
from datetime import UTC, datetime, timedelta
from uuid import UUID

from sqlalchemy.ext.asyncio import AsyncConnection

from data import comparison as sql
from data import comparison_details as details
from data.accounts import EmbeddingSetting, embedding_setting
from data.errors import ComparisonTimedOut
from indexer.query import QueryNotEmbedded, embed_query
from resolvers import ranking
from resolvers.arguments import SimilarArgs, plain_text
from resolvers.check_costs import check_exactly
from resolvers.context import Context
from resolvers.degraded import degraded
from resolvers.lookup_path import vouches_for
from resolvers.results import SearchResult
from resolvers.similar_results import bands_of, neighbour_of

MAX_SEARCH_CHARS = 2000
NO_SESSION = UUID(int=0)  # a search text belongs to no session: every session is a candidate


def checked_text(text: str, name: str) -> str:
    """The search text, stripped; refused when empty or longer than the bound."""
    return plain_text(text, name, MAX_SEARCH_CHARS)


async def search_sessions(context: Context, text: str, args: SimilarArgs) -> SearchResult:
    """The account's sessions nearest the text (already checked)."""
    started, now = time.perf_counter(), datetime.now(UTC)
    account_id = context.principal.account_id
    asked = {"similar_window_applied"} if args.window_days is not None else set()
    asked |= {"similar_filter_applied"} if args.filtered else set()
    async with context.services.engine.connect() as conn:
        setting = await embedding_setting(conn, account_id)
    refused = _refusal(context, setting)
    if refused or setting is None:
        return _empty(args, None, asked | refused, started)
    try:
        vector = await embed_query(
            context.services.engine, context.services.embedders, account_id, setting, text, now
        )
    except QueryNotEmbedded as exc:
        return _empty(args, str(setting.identity), asked | exc.reasons, started)
    cutoff = None if args.window_days is None else now - timedelta(days=args.window_days)
    ask = sql.Ask(0, NO_SESSION, cutoff, args.statuses, args.source_types)
    async with sql.reading(context.services.comparison_engine) as conn:
        return await _look_up(conn, context, setting, vector, ask, args, asked, started)


def _refusal(context: Context, setting: EmbeddingSetting | None) -> set[str]:
    if not context.services.tuning.embeddings_enabled:
        return {"semantic_disabled_by_deployment", "search_text_not_embedded"}
    if setting is None or not setting.enabled:
        return {"semantic_not_enabled", "search_text_not_embedded"}
    return set()


async def _look_up(
    conn: AsyncConnection,
    context: Context,
    setting: EmbeddingSetting,
    vector: str,
    ask: sql.Ask,
    args: SimilarArgs,
    asked: set[str],
    started: float,
) -> SearchResult:
    tuning, account_id, identity = (
        context.services.tuning,
        context.principal.account_id,
        setting.identity,
    )
    limits = tuning.limits
    try:
        with sql.within_budget():
            await sql.ensure_configured(conn, tuning.comparison_settings)
            looked = await sql.look_up_text(conn, account_id, identity, vector, ask, limits)
            if not _vouched(looked, str(identity), limits):
                exact = await check_exactly(
                    conn,
                    context.services.checks,
                    account_id,
                    1,
                    tuning.verify_budget_ms,
                    lambda: sql.look_up_text(conn, account_id, identity, vector, ask, limits, True),
                )
                if exact is None:
                    asked = asked | {"similar_approximate_unverified"}
                else:
                    looked.hits = exact.hits
    except ComparisonTimedOut:
        return _empty(args, str(identity), asked | {"similar_comparison_timed_out"}, started)
    return await _answer(conn, account_id, str(identity), looked, ask, args, asked, started)


def _vouched(looked: sql.Looked, model: str, limits: sql.Limits) -> bool:
    """Whether the text's lookup needs no exact check: it took the exact path, or its
    approximate window vouches for its answer."""
    if looked.paths[model][0] == "exact":
        return True
    return vouches_for(looked.windows.get((0, 0)), limits.window, limits.per_probe)


async def _answer(
    conn: AsyncConnection,
    account_id: UUID,
    model: str,
    looked: sql.Looked,
    ask: sql.Ask,
    args: SimilarArgs,
    asked: set[str],
    started: float,
) -> SearchResult:
    """Rank the text's hits and read what the page shows (the comparison's second
    statement, which also says whether anything of the model was comparable)."""
    hits = looked.hits  # one probe: probe 0
    neighbours = ranking.rank_neighbours(hits, args.max_matches_per_session)
    page, more = ranking.page_after(neighbours, args.after, args.limit)
    chunk_ids = [m.chunk_id for n in page for m in n.matches]
    lonely = [] if hits else [details.Lonely(0, ask.session_id, model, ask)]
    shown = await details.show(
        conn,
        account_id,
        chunk_ids,
        chunk_ids if args.include_match_text else [],
        [n.session_id for n in page],
        lonely,
        ranking.SIMILAR_PREVIEW_CHARS,
    )
    if not hits and not shown.comparable:
        asked = asked | {"similar_no_comparable_sessions"}
    cuts = bands_of(model)
    return SearchResult(
        model_identity=model,
        args=args,
        degraded=degraded(True, asked, args.window_days),
        elapsed_ms=_elapsed_ms(started),
        results=tuple(neighbour_of(n, shown, args, None, cuts) for n in page),
        next_after=page[-1].sort_key if more and page else None,
        lookup_path=looked.paths[model][0],
        bands=cuts,
    )


def _empty(args: SimilarArgs, model: str | None, reasons: set[str], started: float) -> SearchResult:
    return SearchResult(
        model_identity=model,
        args=args,
        degraded=degraded(False, reasons, args.window_days),
        elapsed_ms=_elapsed_ms(started),
        results=(),
        next_after=None,
        lookup_path=None,
        bands=bands_of(model),
    )


def _elapsed_ms(started: float) -> float:
    return round((time.perf_counter() - started) * 1000, 2)
