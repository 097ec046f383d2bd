"""The per-request DataLoaders: each batch is a fixed number of statements for one account,
and one value per key, in key order."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TypeVar
from uuid import UUID

from strawberry.dataloader import DataLoader

from data.comparison import reading
from data.comparison_details import ChunkDetail, show
from data.sessions import ReplayPageKey, ReplayTurn, SessionRow, replay_pages, sessions_by_id
from resolvers.budgets import ContentBudget
from resolvers.comparison.phases import SimilarKey, compare_sessions
from resolvers.comparison.results import SimilarResult
from resolvers.comparison.timeline import TimelineKey, TimelineResult, timelines
from resolvers.rules.ranking import SIMILAR_PREVIEW_CHARS
from resolvers.services import Services
from resolvers.shared_terms import Terms, TermsKey, terms_for
from resolvers.telemetry import report_comparisons, tracer
from values import credentials


@dataclass(frozen=True)
class Loaders:
    """One request's DataLoaders, for its caller's account."""

    sessions: DataLoader[UUID, SessionRow | None]
    replays: DataLoader[ReplayPageKey, list[ReplayTurn]]
    similar: DataLoader[SimilarKey, SimilarResult | None]
    timelines: DataLoader[TimelineKey, TimelineResult | None]
    terms: DataLoader[TermsKey, Terms]
    passages: DataLoader[PassageKey, ChunkDetail | None]

    @classmethod
    def of(cls, services: Services, account_id: UUID, content: ContentBudget) -> Loaders:
        return cls(
            sessions=session_loader(services, account_id),
            replays=replay_loader(services, account_id, content),
            similar=similar_loader(services, account_id),
            timelines=timeline_loader(services, account_id),
            terms=terms_loader(services, account_id),
            passages=passage_loader(services, account_id),
        )


def session_loader(services: Services, account_id: UUID) -> DataLoader[UUID, SessionRow | None]:
    async def load(ids: Sequence[UUID]) -> list[SessionRow | None]:
        async with services.read() as conn:
            rows = await sessions_by_id(conn, account_id, ids)
        return [rows.get(i) for i in ids]

    return DataLoader(load_fn=load)


def replay_loader(
    services: Services, account_id: UUID, content: ContentBudget
) -> DataLoader[ReplayPageKey, list[ReplayTurn]]:
    """Pages of many sessions' replays (a page and one turn more each) in one statement,
    which reads no more content than the request's budget has left unread."""

    async def load(keys: Sequence[ReplayPageKey]) -> list[list[ReplayTurn]]:
        async with services.read() as conn:
            pages = await replay_pages(conn, account_id, keys, content.unread)
        content.read(sum(len(turn.content) for page in pages for turn in page))
        return pages

    return DataLoader(load_fn=load)


# A page's comparisons are spread over connections only this many at least a connection: a
# few comparisons gain nothing from a second statement's round trips.
PART_MIN_COMPARISONS = 4

K = TypeVar("K")


def parts(keys: Sequence[K], connections: int) -> list[Sequence[K]]:
    """The batch cut into consecutive parts, one a connection: as many as `connections`,
    each of at least PART_MIN_COMPARISONS (one part when the batch is smaller)."""
    count = max(1, min(connections, len(keys) // PART_MIN_COMPARISONS))
    size = -(-len(keys) // count)
    return [keys[start : start + size] for start in range(0, len(keys), size)] or [keys]


def similar_loader(
    services: Services, account_id: UUID
) -> DataLoader[SimilarKey, SimilarResult | None]:
    """One batch of the request's comparisons, its parts compared at once over as many of
    the comparisons' connections (each part its two statements, one answer per key)."""

    async def compare(part: Sequence[SimilarKey]) -> list[SimilarResult | None]:
        # Read-only, in autocommit: a transaction begun for a check ends with the connection.
        async with reading(services.comparison_engine) as conn:
            return await compare_sessions(
                conn,
                account_id,
                part,
                services.tuning,
                services.snapshots,
                services.checks,
                services.clock(),
            )

    async def load(keys: Sequence[SimilarKey]) -> list[SimilarResult | None]:
        with tracer.start_as_current_span("similar_sessions.compare") as span:
            span.set_attribute("similar_sessions.comparisons", len(keys))
            started = time.time_ns()
            split = parts(keys, services.tuning.page_connections)
            # Every part ends before the batch answers or fails: no statement outlives it.
            answers = await asyncio.gather(
                *(compare(part) for part in split), return_exceptions=True
            )
            results: list[SimilarResult | None] = []
            for answer in answers:
                if isinstance(answer, BaseException):
                    raise answer
                results.extend(answer)
            report_comparisons(results, started, time.time_ns())
            return results

    return DataLoader(load_fn=load)


def timeline_loader(
    services: Services, account_id: UUID
) -> DataLoader[TimelineKey, TimelineResult | None]:
    async def load(keys: Sequence[TimelineKey]) -> list[TimelineResult | None]:
        async with reading(services.comparison_engine) as conn:
            return await timelines(
                conn, account_id, keys, services.tuning, services.snapshots, services.clock()
            )

    return DataLoader(load_fn=load)


def terms_loader(services: Services, account_id: UUID) -> DataLoader[TermsKey, Terms]:
    """The terms every pair the request shows shares: the fit and the texts read once."""

    async def load(keys: Sequence[TermsKey]) -> list[Terms]:
        return await terms_for(services, account_id, keys)

    return DataLoader(load_fn=load)


# A passage to show, and whether with its text (a preview, read only when asked).
PassageKey = tuple[UUID, bool]


def passage_loader(
    services: Services, account_id: UUID
) -> DataLoader[PassageKey, ChunkDetail | None]:
    """Passages as the answers show them, many in one statement (None: no such passage)."""

    async def load(keys: Sequence[PassageKey]) -> list[ChunkDetail | None]:
        ids = sorted({chunk for chunk, _ in keys})
        texts = sorted({chunk for chunk, text in keys if text})
        async with services.read() as conn:
            shown = await show(
                conn, account_id, ids, texts, [], [], SIMILAR_PREVIEW_CHARS, credentials.shown
            )
        return [shown.chunks.get(chunk) for chunk, _ in keys]

    return DataLoader(load_fn=load)
