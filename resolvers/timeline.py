"""How often has this happened: for a comparison, how many of the account's sessions matched
at or above its model's "related" cut point, by the day, week or month they started, over
the whole history.

It counts among a bounded number of nearest passages per probe
(TIMELINE_NEIGHBOURS_PER_PROBE); when a probe's lookup reached that bound the answer says
so (`similar_timeline_bounded`): more sessions may match than were counted."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from enum import Enum
from uuid import UUID

import structlog
from sqlalchemy.ext.asyncio import AsyncConnection

from data import comparison as sql
from data.errors import ComparisonTimedOut
from data.model_catalog import ModelCatalog
from resolvers import ranking
from resolvers.arguments import SimilarArgs
from resolvers.degraded import Degraded, degraded
from resolvers.similar_results import bands_of
from resolvers.tuning import Tuning

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
    catalog: ModelCatalog,
) -> list[TimelineResult | None]:
    """One timeline per key, in key order (None for a session the account does not have);
    one statement per bucket size asked."""
    now = datetime.now(UTC)
    results: list[TimelineResult | None] = [None] * len(keys)
    for bucket in TimelineBucket:
        mine = [key for key, (_, _, b) in enumerate(keys) if b is bucket]
        if not mine:
            continue
        asks = [_ask(key, *keys[key][:2], now) for key in mine]
        looked, timed_out = await _look_up(conn, account_id, asks, bucket, tuning, catalog)
        for key in mine:
            if key in looked.found or timed_out:
                results[key] = _result(key, keys[key][1], bucket, looked, timed_out)
    return results


def _ask(key: int, session_id: UUID, args: SimilarArgs, now: datetime) -> sql.Ask:
    cutoff = None if args.window_days is None else now - timedelta(days=args.window_days)
    return sql.Ask(key, session_id, cutoff, args.statuses, args.source_types)


async def _look_up(
    conn: AsyncConnection,
    account_id: UUID,
    asks: list[sql.Ask],
    bucket: TimelineBucket,
    tuning: Tuning,
    catalog: ModelCatalog,
) -> tuple[sql.Looked, bool]:
    limits = sql.Limits(
        per_probe=TIMELINE_NEIGHBOURS_PER_PROBE,
        floor=ranking.MIN_SIMILAR_SIMILARITY,  # no model's related cut point is below it
        overfetch=TIMELINE_NEIGHBOURS_PER_PROBE,
        exact_scan_max_chunks=tuning.exact_scan_max_chunks,
    )
    try:
        with sql.within_budget():
            await sql.ensure_configured(conn, tuning.comparison_settings)
            for attempt in range(2):
                models = await catalog.models(conn, account_id)
                related = {str(m): bands_of(str(m)).related for m in models}
                looked = await sql.look_up(
                    conn, account_id, asks, models, limits, timeline=(bucket.value, related)
                )
                if attempt or all(path != "unserved" for path, _ in looked.paths.values()):
                    return looked, False
                catalog.forget(account_id)  # a model appeared since it was read
    except ComparisonTimedOut:
        log.warning("similar_timeline_timed_out", budget_ms=tuning.comparison_timeout_ms)
        await conn.rollback()
    return sql.Looked(), True


def _result(
    key: int, args: SimilarArgs, bucket: TimelineBucket, looked: sql.Looked, timed_out: bool
) -> TimelineResult:
    reasons = {"similar_timeline_bounded"} if key in looked.bounded else set()
    reasons |= {"similar_window_applied"} if args.window_days is not None else set()
    reasons |= {"similar_filter_applied"} if args.filtered else set()
    reasons |= {"similar_comparison_timed_out"} if timed_out else set()
    counts = sorted(looked.buckets.get(key, []))
    return TimelineResult(
        bucket=bucket,
        per_probe_bound=TIMELINE_NEIGHBOURS_PER_PROBE,
        counted_from=bands_of(looked.models.get(key, (None, 0))[0]).related,
        buckets=tuple(BucketCount(start, n) for start, n in counts),
        degraded=degraded(key in looked.models and not timed_out, reasons, args.window_days),
    )
