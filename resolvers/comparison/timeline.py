"""How often has this happened: for a comparison, how many of the account's sessions matched
at or above its model's "related" cut point, by the day, week or month they started, over
the whole history.

It counts among a bounded number of nearest passages per probe
(TIMELINE_NEIGHBOURS_PER_PROBE); when a probe's lookup reached that bound the answer says
so (`similar_timeline_bounded`): more sessions may match than were counted."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from enum import Enum
from uuid import UUID

import structlog
from sqlalchemy.ext.asyncio import AsyncConnection

from data import comparison as sql
from data.account_snapshot import AccountSnapshot, Snapshots
from data.errors import ComparisonTimedOut
from data.lookups import Ask, Counted
from resolvers.arguments import SimilarArgs
from resolvers.comparison.answer import bands_of
from resolvers.comparison.looking import served
from resolvers.comparison.phases import ask_of
from resolvers.comparison.plans import account_plan, route, snapshot_of
from resolvers.comparison.state import NOT_NARROWED
from resolvers.rules import ranking
from resolvers.rules.degraded import Degraded, degraded
from resolvers.rules.lookup_plan import Caller
from resolvers.tuning import Tuning
from values.reasons import Reason

log = structlog.get_logger(__name__)
TIMELINE_NEIGHBOURS_PER_PROBE = ranking.TIMELINE_NEIGHBOURS_PER_PROBE


class TimelineBucket(Enum):
    DAY = "day"
    WEEK = "week"
    MONTH = "month"


TimelineKey = tuple[UUID, SimilarArgs, TimelineBucket]


@dataclass(frozen=True, slots=True)
class BucketCount:
    start: datetime  # the bucket's first instant, UTC
    sessions: int  # sessions that started in it and matched at or above "related"


@dataclass(frozen=True, slots=True)
class TimelineResult:
    bucket: TimelineBucket
    per_probe_bound: int
    counted_from: float  # the similarity counted from: the "related" cut point
    buckets: tuple[BucketCount, ...]  # the non-empty buckets, oldest first
    degraded: Degraded

    @property
    def sessions(self) -> int:
        return sum(b.sessions for b in self.buckets)


async def timelines(
    conn: AsyncConnection,
    account_id: UUID,
    keys: Sequence[TimelineKey],
    tuning: Tuning,
    snapshots: Snapshots,
    now: datetime | None = None,
) -> list[TimelineResult | None]:
    """One timeline per key, in key order (None for a session the account does not have);
    one statement per bucket size asked; windows end at `now` (the wall clock when not
    given)."""
    now = now or datetime.now(UTC)
    results: list[TimelineResult | None] = [None] * len(keys)
    for bucket in TimelineBucket:
        mine = [n for n, (_, _, b) in enumerate(keys) if b is bucket]
        if not mine:
            continue
        asks = [ask_of(n, *keys[n][:2], now, NOT_NARROWED) for n in mine]
        counts = await _count(conn, account_id, asks, bucket, tuning, snapshots)
        timed_out = counts is None
        for n, counted in zip(mine, counts or [Counted()] * len(mine), strict=True):
            if counted is not None:
                results[n] = _result(keys[n][1], bucket, counted, timed_out)
    return results


async def _count(
    conn: AsyncConnection,
    account_id: UUID,
    asks: list[Ask],
    bucket: TimelineBucket,
    tuning: Tuning,
    snapshots: Snapshots,
) -> Sequence[Counted | None] | None:
    """Each ask's counts (None for a missing session); None when the budget ran out."""
    try:
        with sql.within_budget():
            snapshot = await snapshot_of(conn, snapshots, account_id, tuning)
            counting = account_plan(Caller.TIMELINE, tuning, snapshot, account_id)
            await sql.ensure_configured(conn, counting.settings)
            # no model's related cut point is below the contract's floor
            limits = counting.limits(per_probe=TIMELINE_NEIGHBOURS_PER_PROBE)

            async def count(known: AccountSnapshot) -> sql.Timeline:
                planned = account_plan(Caller.TIMELINE, tuning, known, account_id)
                related = {str(m): bands_of(str(m)).related for m in known.models}
                return await sql.count_matches(
                    conn,
                    account_id,
                    asks,
                    known.models,
                    limits,
                    route(planned, known),
                    bucket.value,
                    related,
                )

            counted = await count(snapshot)
            counted, _ = await served(
                conn, snapshots, snapshot, account_id, counted, counted.paths.values(), count
            )
            return counted.counts
    except ComparisonTimedOut:
        log.warning("similar_timeline_timed_out", budget_ms=tuning.comparison_timeout_ms)
        await conn.rollback()
    return None


def _result(
    args: SimilarArgs, bucket: TimelineBucket, counted: Counted, timed_out: bool
) -> TimelineResult:
    reasons = {Reason.SIMILAR_TIMELINE_BOUNDED} if counted.bounded else set()
    reasons |= {Reason.SIMILAR_WINDOW_APPLIED} if args.window_days is not None else set()
    reasons |= {Reason.SIMILAR_FILTER_APPLIED} if args.filtered else set()
    reasons |= {Reason.SIMILAR_COMPARISON_TIMED_OUT} if timed_out else set()
    return TimelineResult(
        bucket=bucket,
        per_probe_bound=TIMELINE_NEIGHBOURS_PER_PROBE,
        counted_from=bands_of(counted.model).related,
        buckets=tuple(BucketCount(start, n) for start, n in counted.buckets),
        degraded=degraded(counted.model is not None and not timed_out, reasons, args.window_days),
    )
