"""Search by describing what happened: the text is looked up by each leg that can run (the
lexical leg always; the dense leg when the account has a dense model and the text could be
embedded by it), their session rankings fused by reciprocal rank (rules/fusion.py), and the
answer published as cosines in one model's space (the dense model's when its leg ran, else
the account's configured model's), banded by that model's cut points for a text. When
nothing passes, the answer says so and offers the nearest passages, labelled loose."""

from __future__ import annotations

import time
from dataclasses import dataclass, replace
from datetime import UTC, datetime, timedelta
from uuid import UUID

from sqlalchemy.ext.asyncio import AsyncConnection

from data import comparison as sql
from data import comparison_details as details
from data.account_snapshot import AccountSnapshot
from data.accounts import EmbeddingSetting, embedding_setting
from data.errors import ComparisonTimedOut
from data.lookups import Ask
from data.model_identity import ModelIdentity
from data.slot_chunks import pending_count
from data.vector_slots import Space, VectorSlot
from indexer import lexical
from indexer.query import QueryNotEmbedded, embed_query
from resolvers.arguments import SimilarArgs, plain_text
from resolvers.comparison.answer import elapsed_ms, neighbour_of
from resolvers.comparison.legs import Leg, LegAnswer, Text, dense_leg, lexical_leg
from resolvers.comparison.plans import account_plan, snapshot_of
from resolvers.comparison.results import SearchResult
from resolvers.comparison.searched import fused_page, nearest_page
from resolvers.rules import ranking
from resolvers.rules.calibration import ProbeKind, calibration
from resolvers.rules.degraded import degraded
from resolvers.rules.lookup_plan import Caller, plan
from resolvers.services import Services
from values import credentials
from values.reasons import ASKED, Reason

MAX_SEARCH_CHARS = 2000
NO_SESSION = UUID(int=0)  # a search text belongs to no session: every session is a candidate


def checked_text(text: str, name: str) -> str:
    """The search text, stripped; refused when empty or longer than the bound."""
    return plain_text(text, name, MAX_SEARCH_CHARS)


@dataclass(frozen=True, slots=True)
class Search:
    """One search while it runs: the text, its arguments, the account's setting, the reasons
    it has so far, and when it started."""

    text: Text
    args: SimilarArgs
    setting: EmbeddingSetting | None
    reasons: frozenset[Reason]
    started: float
    embed_ms: float = 0.0  # the text's embedding by the dense model, when it was asked

    def with_reasons(self, *codes: Reason) -> Search:
        return replace(self, reasons=self.reasons | set(codes))


async def search_sessions(
    services: Services,
    account_id: UUID,
    text: str,
    args: SimilarArgs,
    only: Leg | None = None,
) -> SearchResult:
    """The account's sessions nearest the text (already checked); with `only`, the answer of
    that leg alone (to look at each leg in isolation)."""
    search = await _begun(services, account_id, text, args)
    if not search.text.words.strip():  # nothing left once a credential was left out
        return _empty(search)
    dense, vector, search = await _dense_text(services, search)
    search = await _answer_space(services, search, dense, vector)
    async with sql.reading(services.comparison_engine) as conn:
        try:
            with sql.within_budget():
                await sql.ensure_configured(conn, plan(Caller.SEARCH, services.tuning).settings)
                legs = await _legs(conn, services, search, dense, vector)
                search = await _behind(conn, search, legs)
        except ComparisonTimedOut:
            return _empty(search.with_reasons(Reason.SIMILAR_COMPARISON_TIMED_OUT))
        ran = [leg for leg in legs if only is None or leg.leg is only]
        return await _answer(conn, services, search, ran)


async def _begun(services: Services, account_id: UUID, text: str, args: SimilarArgs) -> Search:
    now = services.clock()
    cutoff = None if args.window_days is None else now - timedelta(days=args.window_days)
    asked = {Reason.SIMILAR_WINDOW_APPLIED} if args.window_days is not None else set()
    asked |= {Reason.SIMILAR_FILTER_APPLIED} if args.filtered else set()
    # A credential is no search term: searching for one finds nothing, and says so.
    kept = credentials.without(text)
    if kept != text:
        asked.add(Reason.SEARCH_TEXT_CREDENTIAL_MASKED)
        text = kept
    async with services.read() as conn:
        setting = await embedding_setting(conn, account_id)
    ask = Ask(0, NO_SESSION, cutoff, args.statuses, args.source_types)
    words = Text(account_id, text, ask, None)
    return Search(words, args, setting, frozenset(asked), time.perf_counter())


def dense_space(setting: EmbeddingSetting | None) -> Space | None:
    """The account's dense model's space: its dense model beside the configured one, or its
    configured model itself when that is not the lexical family; None without either."""
    if setting is None or not setting.enabled:
        return None
    if setting.dense is not None:
        return Space(setting.dense, VectorSlot.DENSE)
    if lexical.is_lexical(setting.identity):
        return None
    return Space(setting.identity, VectorSlot.PRIMARY)


async def _dense_text(
    services: Services, search: Search
) -> tuple[Space | None, str | None, Search]:
    """The dense model's space and the text's vector in it, or why the dense leg cannot run."""
    space = dense_space(search.setting)
    refused = _refusal(services, search.setting)
    if refused:
        return space, None, search.with_reasons(*refused)
    if space is None:
        return None, None, search
    started = time.perf_counter()
    vector = await _embedded(services, search, space.identity)
    search = replace(search, embed_ms=elapsed_ms(started))
    if isinstance(vector, frozenset):
        return space, None, search.with_reasons(*vector, Reason.SEARCH_DENSE_LEG_FAILED)
    return space, vector, search


def _refusal(services: Services, setting: EmbeddingSetting | None) -> frozenset[Reason]:
    if not services.tuning.embeddings_enabled:
        return frozenset({Reason.SEMANTIC_DISABLED_BY_DEPLOYMENT, Reason.SEARCH_TEXT_NOT_EMBEDDED})
    if setting is None or not setting.enabled:
        return frozenset({Reason.SEMANTIC_NOT_ENABLED, Reason.SEARCH_TEXT_NOT_EMBEDDED})
    return frozenset()


async def _embedded(
    services: Services, search: Search, identity: ModelIdentity
) -> str | frozenset[Reason]:
    """The text's vector in a model, or the reason codes why it could not be embedded."""
    assert search.setting is not None
    setting = replace(search.setting, identity=identity)
    try:
        return await embed_query(
            services.engine,
            services.embedders,
            search.text.account_id,
            setting,
            search.text.words,
            datetime.now(UTC),
        )
    except QueryNotEmbedded as exc:
        return exc.reasons


async def _answer_space(
    services: Services, search: Search, dense: Space | None, vector: str | None
) -> Search:
    """The space the answer publishes its similarities in, and the text's vector there."""
    if dense is not None and vector is not None:
        return replace(search, text=replace(search.text, answer=(dense, vector)))
    setting = search.setting
    if setting is None or _refusal(services, setting):
        return search
    primary = await _embedded(services, search, setting.identity)
    if isinstance(primary, frozenset):
        return search.with_reasons(*primary)
    answer = (Space(setting.identity, VectorSlot.PRIMARY), primary)
    return replace(search, text=replace(search.text, answer=answer))


async def _legs(
    conn: AsyncConnection,
    services: Services,
    search: Search,
    dense: Space | None,
    vector: str | None,
) -> list[LegAnswer]:
    started = time.perf_counter()
    legs = [replace(await lexical_leg(conn, search.text), elapsed_ms=elapsed_ms(started))]
    if dense is None:
        return legs
    model = str(dense.identity)
    if vector is None:  # why: the reasons the text's embedding gave, not what was asked
        why = search.reasons - ASKED
        return [*legs, LegAnswer(Leg.DENSE, model, False, why_not=why, elapsed_ms=search.embed_ms)]
    floor = calibration(model, ProbeKind.TEXT).floor
    snapshot = await _snapshot(conn, services, search)
    searching = account_plan(Caller.SEARCH, services.tuning, snapshot, search.text.account_id)
    started = time.perf_counter()
    leg = await dense_leg(
        conn, search.text, dense, vector, floor, searching, services.checks, snapshot
    )
    legs.append(replace(leg, elapsed_ms=search.embed_ms + elapsed_ms(started)))
    return legs


async def _snapshot(conn: AsyncConnection, services: Services, search: Search) -> AccountSnapshot:
    """The account's snapshot, which the dense leg and the nearest passages plan from."""
    return await snapshot_of(conn, services.snapshots, search.text.account_id, services.tuning)


async def _behind(conn: AsyncConnection, search: Search, legs: list[LegAnswer]) -> Search:
    """The search named behind when its dense leg ran while some of the account's passages
    still wait for the dense model (it lags the lexical leg on sessions just ingested)."""
    dense = next((leg for leg in legs if leg.leg is Leg.DENSE and leg.ran), None)
    if dense is None or search.setting is None or search.setting.dense is None:
        return search
    waiting = await pending_count(
        conn, search.text.account_id, search.setting.scope == "summaries_only", VectorSlot.DENSE
    )
    return search.with_reasons(Reason.SEARCH_DENSE_LEG_BEHIND) if waiting else search


async def _answer(
    conn: AsyncConnection,
    services: Services,
    search: Search,
    legs: list[LegAnswer],
) -> SearchResult:
    """Fuse the legs, read what the page shows (the second statement), and answer; when
    nothing was found, the nearest passages without a floor, labelled loose."""
    args, answer = search.args, search.text.answer
    model = None if answer is None else str(answer[0].identity)
    cuts = calibration(model, ProbeKind.TEXT)
    page, more = fused_page(legs, args)
    nearest: list[ranking.Neighbour] = []
    if not page and not args.after:
        if answer is not None:
            snapshot = await _snapshot(conn, services, search)
            account_id = search.text.account_id
            searching_at = plan(Caller.SEARCH, services.tuning).ef_search
            loose = account_plan(
                Caller.NEAREST, services.tuning, snapshot, account_id, None, searching_at
            )
            nearest = await nearest_page(conn, search.text, answer, loose, args, snapshot)
        nothing = nearest or answer is None  # else nothing of the model to compare with
        reason = (
            Reason.SIMILAR_NOTHING_CLOSE_ENOUGH
            if nothing
            else Reason.SIMILAR_NO_COMPARABLE_SESSIONS
        )
        search = search.with_reasons(reason)
    if any(leg.unverified for leg in legs):
        search = search.with_reasons(Reason.SIMILAR_APPROXIMATE_UNVERIFIED)
    shown = await _shown(conn, search, [*page, *nearest])
    return SearchResult(
        model_identity=model,
        args=args,
        degraded=degraded(answer is not None, set(search.reasons), args.window_days),
        elapsed_ms=elapsed_ms(search.started),
        results=tuple(neighbour_of(n, shown, args, None, cuts.bands) for n in page),
        next_after=page[-1].sort_key if more and page else None,
        lookup_path=next((leg.path for leg in legs if leg.path is not None), None),
        bands=cuts.bands,
        floor=cuts.floor,
        legs=tuple(legs),
        nearest=tuple(neighbour_of(n, shown, args, None, cuts.bands) for n in nearest),
    )


async def _shown(
    conn: AsyncConnection, search: Search, neighbours: list[ranking.Neighbour]
) -> details.PageDetails:
    """The second statement: the shown passages and sessions."""
    chunk_ids = [m.chunk_id for n in neighbours for m in n.matches]
    return await details.show(
        conn,
        search.text.account_id,
        chunk_ids,
        chunk_ids if search.args.include_match_text else [],
        [n.session_id for n in neighbours],
        [],
        ranking.SIMILAR_PREVIEW_CHARS,
        credentials.shown,
        search.text.words,
    )


def _empty(search: Search) -> SearchResult:
    args, answer = search.args, search.text.answer
    model = None if answer is None else str(answer[0].identity)
    cuts = calibration(model, ProbeKind.TEXT)
    return SearchResult(
        model_identity=model,
        args=args,
        degraded=degraded(False, set(search.reasons), args.window_days),
        elapsed_ms=elapsed_ms(search.started),
        results=(),
        next_after=None,
        lookup_path=None,
        bands=cuts.bands,
        floor=cuts.floor,
    )
