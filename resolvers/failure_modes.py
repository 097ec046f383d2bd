"""Failure modes, live: which failures of a window recur, which are new, and why they match.

A question runs as its phases: read the window, compare, group, mark recurring (once per
pin: `grouping`), then page and show (every page: `failure_modes`).

The account's sessions of the asked statuses that started in the window (the newest
`SIMILAR_SESSIONS_FAILURE_MODES_SESSIONS`) are compared with each other in one exact pass
(resolvers/comparison/window_pass.py: the same probes, filters, window and best-passage
similarity as each one's similarSessions, over one pool of the window's passages), and
grouped by average linkage over their scores (resolvers/rules/failure_groups.py).
Then, for isNew, each group's representative is compared with only the sessions that
started before the window, where the nearest passage of each probe says exactly whether one
is "related" or closer; its other members only when the representative has none: a
recurring group is known from one member, a new group from all of them. One question (its
pin: the window's end and the data's watermark) is grouped once; its later pages come from
the process's memo (resolvers/groupings.py)."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Iterable, Sequence
from datetime import datetime, timedelta
from typing import NamedTuple
from uuid import UUID

from data.comparison import reading
from data.failures import InWindow, Pin, account_watermark, sessions_in_window
from data.window_pool import PoolFilter, pool_size
from resolvers.arguments import FailureArgs, SimilarArgs
from resolvers.comparison.answer import elapsed_ms
from resolvers.comparison.results import SimilarResult
from resolvers.comparison.state import Narrowing
from resolvers.comparison.window_pass import compare_exactly
from resolvers.context import Context
from resolvers.failure_members import group_terms
from resolvers.failure_results import FailureGroupResult, FailureModesResult
from resolvers.groupings import Grouping
from resolvers.rules import failure_groups as rules
from resolvers.rules.degraded import Degraded, degraded
from resolvers.rules.lookup_plan import Caller, plan
from values.reasons import Reason

TIMED_OUT = Reason.SIMILAR_COMPARISON_TIMED_OUT
REGROUPED = Reason.FAILURE_MODES_REGROUPED
# Sessions compared in one batch of the loader for isNew (each batch's lookup statement must
# finish within the comparison budget, SIMILAR_SESSIONS_COMPARISON_TIMEOUT_MS, 3 s: at 100k
# chunks under load one session's lookups took 116 ms p50 and 400 ms p90 here).
FAILURE_MODES_BATCH = 16
UNVERIFIED = Reason.SIMILAR_APPROXIMATE_UNVERIFIED


class Lookup(NamedTuple):
    """A comparison the failure modes ask: the API's arguments, and how they narrow it."""

    args: SimilarArgs
    narrowing: Narrowing


def lookups(args: FailureArgs, window_start: datetime) -> tuple[Lookup, Lookup]:
    """The two comparisons of each member: its neighbours among the window's sessions of the
    asked statuses and source types (with their best match), and among every session that
    started before the window (the nearest only); neither looks below the floor."""
    links = SimilarArgs(
        limit=1,
        max_matches_per_session=1,
        window_days=args.window_days,
        include_match_text=False,
        statuses=args.statuses,
        source_types=args.source_types,
    )
    earlier = SimilarArgs(limit=1, max_matches_per_session=0, include_match_text=False)
    before = Narrowing(started_before=window_start, offer_nearest=False)
    return Lookup(links, Narrowing(offer_nearest=False)), Lookup(earlier, before)


async def failure_modes(context: Context, args: FailureArgs, terms: bool) -> FailureModesResult:
    """One page of the question's groups, shown; with `terms` (and texts shown), each group's
    shared terms are chosen too."""
    started = time.perf_counter()
    g, regrouped = await grouping(context, args)
    found, reasons = g.found, set(g.reasons) | ({REGROUPED} if regrouped else set())
    groups, page, more = _page(g.groups, args)
    shown, model = await _shown(context, args, page, g, terms)
    account_id = context.principal.account_id
    return FailureModesResult(
        args=args,
        window_start=g.window_start,
        sessions=found.total,
        compared=len(found.sessions),
        left_out=found.total - len(found.sessions),
        compared_since=found.sessions[-1].started_at if found.sessions else None,
        not_embedded=g.not_embedded,
        bound=g.bound,
        group_count=len(groups),
        degraded=_block(reasons, found, g.bound, g.not_embedded, g.semantic),
        elapsed_ms=elapsed_ms(started),
        groups=shown,
        next_after=page[-1].position if more and page else None,
        end_cursor=_sealed(context, args, page[-1].position, g.pin) if more and page else None,
        shared_terms_model=model,
        as_of=context.cursors.failure_pin(g.pin, args.members_binding(account_id)),
    )


async def grouping(context: Context, args: FailureArgs) -> tuple[Grouping, bool]:
    """The question's grouping, and whether it was grouped again because the account's data
    changed since the pin the request named (a request naming none asks a new question)."""
    account_id = context.principal.account_id
    async with context.services.read() as conn:
        watermark = await account_watermark(conn, account_id)
    pin = args.pin
    regrouped = pin is not None and pin.watermark != watermark
    binding = json.dumps(args.members_binding(account_id))
    if regrouped:
        pin = Pin(context.services.clock(), watermark)
    elif pin is None:
        pin = context.services.groupings.recent(
            (binding, watermark), lambda: Pin(context.services.clock(), watermark)
        )
    key = (binding, pin)
    found = await context.services.groupings.get(key, lambda: _grouped(context, args, pin))
    if TIMED_OUT in found.reasons:
        context.services.groupings.forget(key)  # an answer cut short is no grouping to keep
    for row in found.found.sessions:
        context.loaders.sessions.prime(row.id, row)
    return found, regrouped


async def _grouped(context: Context, args: FailureArgs, pin: Pin) -> Grouping:
    """The question's phases up to its groups: read the window as of the pin, compare its
    sessions with each other, group them, and mark each group recurring or new (no group
    when a comparison ran past its budget)."""
    window_start = pin.window_end - timedelta(days=args.window_days)
    bound = context.services.tuning.failure_modes_sessions
    found = await _window(context, args, window_start, bound)
    links, earlier = lookups(args, window_start)
    near = await compare_window(context, [row.id for row in found.sessions], links, pin.window_end)
    embedded = {i: r for i, r in near.items() if r.model_identity is not None}
    before: dict[UUID, SimilarResult] = {}
    groups: list[rules.Group] = []
    if not _timed_out(near.values()):
        groups = await asyncio.to_thread(_groups_of, found, embedded)
        groups, before = await _marked(context, groups, earlier, pin)
    timed_out = _timed_out([*near.values(), *before.values()])
    not_embedded = 0 if timed_out else len(near) - len(embedded)
    return Grouping(
        pin=pin,
        window_start=window_start,
        bound=bound,
        found=found,
        groups=tuple(groups),
        cuts={i: r.bands for i, r in embedded.items()},
        seen_before={
            g.representative: like
            for g in groups
            if (like := _earliest_like(g, before)) is not None
        },
        not_embedded=not_embedded,
        semantic=bool(embedded) and not timed_out,
        reasons=frozenset(_reasons(found, bound, [*near.values(), *before.values()], not_embedded)),
    )


async def _window(
    context: Context, args: FailureArgs, window_start: datetime, bound: int
) -> InWindow:
    """The window's sessions (the newest `bound`)."""
    async with context.services.read() as conn:
        return await sessions_in_window(
            conn,
            context.principal.account_id,
            window_start,
            args.statuses,
            args.source_types,
            bound,
        )


async def compare_window(
    context: Context, ids: Sequence[UUID], lookup: Lookup, now: datetime
) -> dict[UUID, SimilarResult]:
    """Each session compared as `lookup` asks, their windows ending at `now`, in one
    exact pass on one connection: its pool is read once and ranked in memory, so a second
    connection would read it again for no gain, and holds one core, not both, while
    other accounts are served."""
    if not ids:
        return {}
    services = context.services
    async with reading(services.comparison_engine) as conn:
        results = await compare_exactly(
            conn,
            context.principal.account_id,
            ids,
            lookup.args,
            lookup.narrowing,
            services.tuning,
            services.snapshots,
            now,
        )
    return {i: r for i, r in zip(ids, results, strict=True) if r is not None}


async def _compared(
    context: Context, ids: Sequence[UUID], lookup: Lookup
) -> dict[UUID, SimilarResult]:
    """Each session compared as `lookup` asks, FAILURE_MODES_BATCH to a batch of the
    request's similarSessions DataLoader, one batch after another."""
    out: dict[UUID, SimilarResult] = {}
    for start in range(0, len(ids), FAILURE_MODES_BATCH):
        chunk = ids[start : start + FAILURE_MODES_BATCH]
        answers = await context.loaders.similar.load_many(
            [(i, lookup.args, lookup.narrowing) for i in chunk]
        )
        out |= {i: r for i, r in zip(chunk, answers, strict=True) if r is not None}
        if _timed_out(out.values()):
            break  # the answer is empty either way
    return out


def _timed_out(results: Iterable[SimilarResult]) -> bool:
    return any(TIMED_OUT in r.degraded.reasons for r in results)


def _groups_of(found: InWindow, embedded: dict[UUID, SimilarResult]) -> list[rules.Group]:
    """The embedded sessions' groups by the rule over their neighbours (unmarked: all new);
    tens of thousands of links for a window of 500, so it runs in a worker thread."""
    starts = {row.id: row.started_at for row in found.sessions if row.id in embedded}
    member_links = [link for i, r in embedded.items() for link in links_of(i, r)]
    related = {i: r.bands.related for i, r in embedded.items()}
    return rules.groups_of(starts, member_links, frozenset(), related)


def links_of(member: UUID, result: SimilarResult) -> list[rules.Link]:
    """The member's neighbours (every one above its model's floor) as similarSessions ranks
    them, each tied by its best match (this member's probe passage and the neighbour's)."""
    return [
        rules.Link(member, n.session_id, n.similarity, result.probes[m.probe], m.chunk_id, n.score)
        for n in result.ranked
        for m in n.matches[:1]
    ]


async def _marked(
    context: Context, groups: list[rules.Group], earlier: Lookup, pin: Pin
) -> tuple[list[rules.Group], dict[UUID, SimilarResult]]:
    """The groups told recurring (a member has an earlier session "related" or closer) or new,
    and the earlier sessions' comparisons that told them; no group when one of those ran past
    its budget."""
    before = await _earlier(context, groups, earlier, pin)
    if _timed_out(before.values()):
        return [], before
    recurring = frozenset(i for i, r in before.items() if _recurs(r))
    return rules.marked(groups, recurring), before


async def _earlier(
    context: Context, groups: Sequence[rules.Group], earlier: Lookup, pin: Pin
) -> dict[UUID, SimilarResult]:
    """The earlier sessions' comparison of each group's representative, then of the other
    members of the groups whose representative has no related one: enough to tell every
    group new or recurring exactly. In one exact pass each when the sessions before the
    window hold at most the earlier sessions' plan's exact size (rules/lookup_plan.py); through
    the request's similarSessions DataLoader (its lookup paths) when they hold more."""
    where = PoolFilter(None, None, None, earlier.narrowing.started_before)
    bound = plan(Caller.EARLIER, context.services.tuning).exact_scan_max_chunks
    async with context.services.read() as conn:
        size = await pool_size(conn, context.principal.account_id, where, bound)

    async def compared(ids: Sequence[UUID]) -> dict[UUID, SimilarResult]:
        if size <= bound:
            return await compare_window(context, ids, earlier, pin.window_end)
        return await _compared(context, ids, earlier)

    before = await compared([g.representative for g in groups])
    rest = [
        m.session_id
        for g in groups
        if not (g.representative in before and _recurs(before[g.representative]))
        for m in g.members
        if m.session_id != g.representative
    ]
    return before | await compared(rest)


def _recurs(result: SimilarResult) -> bool:
    """Whether a session that started before the window is a neighbour at "related" or
    closer (its lookup had only those as candidates)."""
    return any(n.similarity >= result.bands.related for n in result.ranked)


def _earliest_like(group: rules.Group, before: dict[UUID, SimilarResult]) -> UUID | None:
    """For a recurring group, the earlier session most like one of its members asked (the
    representative alone when it has one; highest similarity, ties by id); None if new."""
    best: tuple[float, UUID] | None = None
    for m in group.members:
        result = before.get(m.session_id)
        if result is None:
            continue
        for n in result.ranked:
            if n.similarity >= result.bands.related and (
                best is None or (-n.similarity, n.session_id) < (-best[0], best[1])
            ):
                best = (n.similarity, n.session_id)
    return None if best is None else best[1]


def _page(
    groups: tuple[rules.Group, ...], args: FailureArgs
) -> tuple[tuple[rules.Group, ...], list[rules.Group], bool]:
    """The groups asked (those holding `containing`, when it is asked), the page of them after
    the cursor, and whether more follow."""
    if args.containing is not None:
        groups = tuple(x for x in groups if any(m.session_id == args.containing for m in x.members))
    page, more = rules.groups_after(groups, args.after, args.limit)
    return groups, page, more


def _sealed(context: Context, args: FailureArgs, after: rules.GroupPosition, pin: Pin) -> str:
    """The groups' end cursor, bound to this account and these arguments, with the pin."""
    binding = args.binding(context.principal.account_id)
    return context.cursors.failure_groups(after, pin, binding)


async def _shown(
    context: Context,
    args: FailureArgs,
    page: Sequence[rules.Group],
    g: Grouping,
    terms: bool,
) -> tuple[tuple[FailureGroupResult, ...], str | None]:
    """The page's groups with their sessions and earlier sessions, and with `terms` (and texts
    shown) their shared terms, and the fit those were chosen with."""
    chosen: list[tuple[str, ...] | None] = [None] * len(page)
    model = None
    if terms and args.include_match_text:
        picked, model = await group_terms(context, page)
        chosen = list(picked)
    sessions = {row.id: row for row in g.found.sessions}
    earlier = [g.seen_before.get(group.representative) for group in page]
    rows = await context.loaders.sessions.load_many([e for e in earlier if e is not None])
    seen = {row.id: row for row in rows if row is not None}
    account_id = context.principal.account_id
    shown = tuple(
        FailureGroupResult(
            group, sessions, seen.get(like) if like else None, shared, g.cuts, args, account_id
        )
        for group, like, shared in zip(page, earlier, chosen, strict=True)
    )
    return shown, model


def _reasons(
    found: InWindow, bound: int, results: Sequence[SimilarResult], not_embedded: int
) -> set[Reason]:
    """The answer's codes: a comparison past its budget (named so, never as sessions not
    embedded), approximate lookups left unchecked, the bound, sessions not embedded."""
    reasons = {TIMED_OUT} if _timed_out(results) else set()
    if any(UNVERIFIED in r.degraded.reasons for r in results):
        reasons.add(UNVERIFIED)
    if found.total > bound:
        reasons.add(Reason.FAILURE_MODES_BOUNDED)
    if not_embedded:
        reasons.add(Reason.FAILURE_MODES_NOT_EMBEDDED)
    return reasons


def _block(
    reasons: set[str], found: InWindow, bound: int, unembedded: int, semantic: bool
) -> Degraded:
    """The answer's degraded block, its sentences naming the counts."""
    values = {
        "sessions": f"{found.total:,}",
        "bound": f"{bound:,}",
        "left_out": f"{found.total - len(found.sessions):,}",
        "compared_since": found.sessions[-1].started_at.isoformat() if found.sessions else "-",
        "not_embedded": f"{unembedded:,}",
    }
    return degraded(semantic and TIMED_OUT not in reasons, reasons, None, tuple(values.items()))
