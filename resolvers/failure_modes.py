"""Failure modes, live: which failures of a window recur, which are new, and why they match.

The account's sessions of the asked statuses that started in the window (the newest
`SIMILAR_SESSIONS_FAILURE_MODES_SESSIONS`) are compared through the request's
similarSessions DataLoader, FAILURE_MODES_BATCH sessions to a batch (one batch of the
loader, its parts at once over the comparisons' connections, each within the comparison's
time budget): first with the filters and the window,
their neighbours among the window's failures, which are the group rule's links; then, for
isNew, among only the sessions that started before the window, where the nearest passage of
each probe says exactly whether one is "related" or closer. That second comparison is asked
of each group's representative first, and of its other members only when the representative
has none: a recurring group is known from one member, a new group from all of them. Grouping
and order are pure (resolvers/rules/failure_groups.py)."""

from __future__ import annotations

import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from uuid import UUID

from data.failures import InWindow, sessions_in_window
from resolvers.arguments import FailureArgs, SimilarArgs
from resolvers.comparison.answer import elapsed_ms
from resolvers.comparison.results import SimilarResult
from resolvers.context import Context
from resolvers.failure_members import group_terms
from resolvers.failure_results import FailureGroupResult, FailureModesResult
from resolvers.rules import failure_groups as rules
from resolvers.rules.calibration import BandCuts
from resolvers.rules.degraded import Degraded, degraded

TIMED_OUT = "similar_comparison_timed_out"
# Sessions compared in one batch of the loader. Each batch's lookup statement must finish
# within the comparison budget (SIMILAR_SESSIONS_COMPARISON_TIMEOUT_MS, 3 s): at 100k chunks
# under load one session's lookups took 116 ms p50 and 400 ms p90 here, so a batch of 50
# (two parts of 25) ran past it and the whole answer came back empty; 16 (two parts of 8)
# keeps each statement near a second (bench/results/failure-modes.md).
FAILURE_MODES_BATCH = 16
UNVERIFIED = "similar_approximate_unverified"


def lookups(args: FailureArgs, window_start: datetime) -> tuple[SimilarArgs, SimilarArgs]:
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
        offer_nearest=False,
    )
    earlier = SimilarArgs(
        limit=1,
        max_matches_per_session=0,
        include_match_text=False,
        started_before=window_start,
        offer_nearest=False,
    )
    return links, earlier


@dataclass(frozen=True, slots=True)
class Grouping:
    """Every group of a window, in order, and what they were made from: the window's sessions
    (the newest `bound`), each one's two comparisons, and the reasons the answer names."""

    window_start: datetime
    bound: int
    found: InWindow
    near: dict[UUID, SimilarResult]  # the links' comparison, by session
    before: dict[UUID, SimilarResult]  # the earlier sessions' comparison, by session
    reasons: frozenset[str]
    groups: tuple[rules.Group, ...]

    @property
    def embedded(self) -> dict[UUID, SimilarResult]:
        return {i: r for i, r in self.near.items() if r.model_identity is not None}


async def grouping(context: Context, args: FailureArgs) -> Grouping:
    """The window's sessions, compared, and all their groups in order (none when a
    comparison ran past its budget); `containing` keeps only that session's group."""
    window_start = datetime.now(UTC) - timedelta(days=args.window_days)
    bound = context.services.tuning.failure_modes_sessions
    found = await _window(context, args, window_start, bound)
    links, earlier = lookups(args, window_start)
    near = await _compared(context, [row.id for row in found.sessions], links)
    embedded = {i: r for i, r in near.items() if r.model_identity is not None}
    before: dict[UUID, SimilarResult] = {}
    groups: list[rules.Group] = []
    if not _timed_out(near.values()):
        starts = {row.id: row.started_at for row in found.sessions if row.id in embedded}
        member_links = [link for i, r in embedded.items() for link in links_of(i, r)]
        groups = rules.groups_of(starts, member_links, frozenset())
        before = await _earlier(context, groups, earlier)
        recurring = frozenset(i for i, r in before.items() if _recurs(r))
        groups = [] if _timed_out(before.values()) else rules.marked(groups, recurring)
    reasons = _reasons(found, bound, near, before)
    if args.containing is not None:
        groups = [g for g in groups if any(m.session_id == args.containing for m in g.members)]
    return Grouping(window_start, bound, found, near, before, frozenset(reasons), tuple(groups))


async def _compared(
    context: Context, ids: Sequence[UUID], args: SimilarArgs
) -> dict[UUID, SimilarResult]:
    """Each session compared with these arguments, FAILURE_MODES_BATCH to a batch of the
    request's similarSessions DataLoader, one batch after another."""
    out: dict[UUID, SimilarResult] = {}
    for start in range(0, len(ids), FAILURE_MODES_BATCH):
        chunk = ids[start : start + FAILURE_MODES_BATCH]
        answers = await context.loaders.similar.load_many([(i, args) for i in chunk])
        out |= {i: r for i, r in zip(chunk, answers, strict=True) if r is not None}
        if _timed_out(out.values()):
            break  # the answer is empty either way
    return out


async def _earlier(
    context: Context, groups: Sequence[rules.Group], earlier: SimilarArgs
) -> dict[UUID, SimilarResult]:
    """The earlier sessions' comparison of each group's representative, then of the other
    members of the groups whose representative has no related one: enough to tell every
    group new or recurring exactly."""
    before = await _compared(context, [g.representative for g in groups], earlier)
    rest = [
        m.session_id
        for g in groups
        if not (g.representative in before and _recurs(before[g.representative]))
        for m in g.members
        if m.session_id != g.representative
    ]
    return before | await _compared(context, rest, earlier)


def _timed_out(results: Iterable[SimilarResult]) -> bool:
    return any(TIMED_OUT in r.degraded.reasons for r in results)


async def failure_modes(context: Context, args: FailureArgs, terms: bool) -> FailureModesResult:
    """One page of the window's groups; with `terms` (and texts shown), each group's shared
    terms are chosen too."""
    started = time.perf_counter()
    g = await grouping(context, args)
    found, embedded, reasons = g.found, g.embedded, set(g.reasons)
    page, more = rules.groups_after(g.groups, args.after, args.limit)
    chosen: list[tuple[str, ...] | None] = [None] * len(page)
    model = None
    if terms and args.include_match_text:
        picked, model = await group_terms(context, page)
        chosen = list(picked)
    shown = await _shown(context, args, page, found, embedded, g.before, chosen)
    unembedded = len(g.near) - len(embedded)
    return FailureModesResult(
        args=args,
        window_start=g.window_start,
        sessions=found.total,
        compared=len(found.sessions),
        left_out=found.total - len(found.sessions),
        compared_since=found.sessions[-1].started_at if found.sessions else None,
        not_embedded=unembedded,
        bound=g.bound,
        group_count=len(g.groups),
        degraded=_block(reasons, found, g.bound, unembedded, bool(embedded)),
        elapsed_ms=elapsed_ms(started),
        groups=shown,
        next_after=page[-1].position if more and page else None,
        end_cursor=_sealed(context, args, page[-1].position) if more and page else None,
        shared_terms_model=model,
    )


def _sealed(context: Context, args: FailureArgs, after: rules.GroupPosition) -> str:
    """The groups' end cursor, bound to this account and these arguments."""
    return context.cursors.failure_groups(after, args.binding(context.principal.account_id))


async def _window(
    context: Context, args: FailureArgs, window_start: datetime, bound: int
) -> InWindow:
    """The window's sessions (the newest `bound`), primed into the request's session loader."""
    async with context.services.engine.connect() as conn:
        found = await sessions_in_window(
            conn,
            context.principal.account_id,
            window_start,
            args.statuses,
            args.source_types,
            bound,
        )
    for row in found.sessions:
        context.loaders.sessions.prime(row.id, row)
    return found


def links_of(member: UUID, result: SimilarResult) -> list[rules.Link]:
    """The member's neighbours at its model's related cut point or closer, each tied by its
    best match (this member's probe passage and the neighbour's passage)."""
    related = result.bands.related
    return [
        rules.Link(member, n.session_id, n.similarity, result.probes[m.probe], m.chunk_id)
        for n in result.ranked
        if n.similarity >= related
        for m in n.matches[:1]
    ]


def _recurs(result: SimilarResult) -> bool:
    """Whether a session that started before the window is a neighbour at "related" or
    closer (its lookup had only those as candidates)."""
    return any(n.similarity >= result.bands.related for n in result.ranked)


def _reasons(
    found: InWindow,
    bound: int,
    near: dict[UUID, SimilarResult],
    before: dict[UUID, SimilarResult],
) -> set[str]:
    results = [*near.values(), *before.values()]
    reasons = {TIMED_OUT} if any(TIMED_OUT in r.degraded.reasons for r in results) else set()
    if any(UNVERIFIED in r.degraded.reasons for r in results):
        reasons.add(UNVERIFIED)
    if found.total > bound:
        reasons.add("failure_modes_bounded")
    if any(r.model_identity is None for r in near.values()):
        reasons.add("failure_modes_not_embedded")
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


async def _shown(
    context: Context,
    args: FailureArgs,
    page: Sequence[rules.Group],
    found: InWindow,
    embedded: dict[UUID, SimilarResult],
    before: dict[UUID, SimilarResult],
    chosen: Sequence[tuple[str, ...] | None],
) -> tuple[FailureGroupResult, ...]:
    """The page's groups with their sessions, earlier sessions and shared terms."""
    sessions = {row.id: row for row in found.sessions}
    cuts: dict[UUID, BandCuts] = {i: r.bands for i, r in embedded.items()}
    earlier = [_earliest_like(g, before) for g in page]
    rows = await context.loaders.sessions.load_many([e for e in earlier if e is not None])
    seen = {row.id: row for row in rows if row is not None}
    account_id = context.principal.account_id
    return tuple(
        FailureGroupResult(
            group, sessions, seen.get(like) if like else None, terms, cuts, args, account_id
        )
        for group, like, terms in zip(page, earlier, chosen, strict=True)
    )


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
