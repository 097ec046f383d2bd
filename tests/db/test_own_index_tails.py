"""An own index's tail (the account's rows written after the index's watermark): looked up
exactly beside the index, so every answer on the account's own index equals the exact
path's, whatever share of its rows is in the tail, with filters, in the timeline and in a
search; rows written before tails existed count as under every mark (never timed)."""

from __future__ import annotations

import uuid

import sqlalchemy as sa
from sqlalchemy.ext.asyncio import AsyncEngine

from data.account_indexes import IndexShape, ensure_account_index, valid_own_index
from data.account_snapshot import Snapshots
from data.comparison_sql import first_statement
from data.own_index_tails import merge_due, tails
from resolvers.arguments import SimilarArgs
from resolvers.comparison.timeline import TimelineBucket, timelines
from resolvers.rules.lookup_path import LookupPath
from resolvers.tuning import Tuning
from tests.support.comparisons import compare
from tests.support.crowded import IDENTITY, crowded_world, served_per_probe
from tests.support.tails import into_tail

SERVED = Tuning(exact_scan_max_chunks=0)  # the account's own index, past any size
EXACT = Tuning(exact_scan_max_chunks=1_000_000)


async def indexed_world(engine: AsyncEngine) -> tuple[str, str, list[str]]:
    account, viewed, others = await crowded_world(engine)
    async with engine.begin() as conn:
        await ensure_account_index(conn, uuid.UUID(account), IDENTITY)
    return account, viewed, others


async def tail_rows(engine: AsyncEngine, account: str) -> int:
    async with engine.connect() as conn:
        (tail,) = await tails(conn, 0, [uuid.UUID(account)])
    return tail.rows


async def test_every_probe_list_equals_the_exact_path_with_a_third_of_the_rows_in_the_tail(
    engine: AsyncEngine,
) -> None:
    account, viewed, _ = await indexed_world(engine)
    moved = await into_tail(engine, account)
    assert moved > 20 and await tail_rows(engine, account) == moved
    served, _ = await served_per_probe(engine, account, viewed, LookupPath.ACCOUNT_INDEX)
    exact, _ = await served_per_probe(engine, account, viewed, LookupPath.EXACT)
    assert served == exact
    assert all(len(rows) <= 25 for rows in served.values())  # the index's and the tail's, cut


async def test_a_tail_holding_every_row_still_answers_as_the_exact_path(
    engine: AsyncEngine,
) -> None:
    account, viewed, _ = await indexed_world(engine)
    await into_tail(engine, account, every=1)
    served, _ = await served_per_probe(engine, account, viewed, LookupPath.ACCOUNT_INDEX)
    exact, _ = await served_per_probe(engine, account, viewed, LookupPath.EXACT)
    assert served == exact and any(served.values())


async def test_comparisons_with_filters_and_the_timeline_equal_the_exact_path_with_a_tail(
    engine: AsyncEngine,
) -> None:
    account, viewed, _ = await indexed_world(engine)
    await into_tail(engine, account)
    for args in ({}, {"statuses": ("completed",)}):
        served = await compare(engine, account, viewed, SERVED, limit=20, **args)
        exact = await compare(engine, account, viewed, EXACT, limit=20, **args)
        assert served.lookup_path == "account_index" and exact.lookup_path == "exact"
        assert [(n.session.id, n.score) for n in served.results] == [
            (n.session.id, n.score) for n in exact.results
        ]
    assert await _timeline(engine, account, viewed, SERVED) == await _timeline(
        engine, account, viewed, EXACT
    )


async def _timeline(engine: AsyncEngine, account: str, viewed: str, tuning: Tuning) -> object:
    async with engine.connect() as conn:
        [result] = await timelines(
            conn,
            uuid.UUID(account),
            [(uuid.UUID(viewed), SimilarArgs(), TimelineBucket.DAY)],
            tuning,
            Snapshots(),
        )
    assert result is not None
    return [(b.start, b.sessions) for b in result.buckets]


async def test_rows_written_before_tails_existed_are_in_the_index_not_the_tail(
    engine: AsyncEngine,
) -> None:
    account, viewed, _ = await crowded_world(engine)
    async with engine.begin() as conn:  # as migration 0012 found them
        await conn.execute(
            sa.text("UPDATE session_chunks SET written_seq = NULL WHERE account_id = :a"),
            {"a": account},
        )
        await ensure_account_index(conn, uuid.UUID(account), IDENTITY)
        own = await valid_own_index(conn, uuid.UUID(account), IDENTITY)
        assert own is not None and own.watermark is not None
        indexed = await conn.execute(
            sa.text(
                "SELECT count(*) FROM session_chunks c "
                f"WHERE {own.predicate(uuid.UUID(account), IDENTITY, 'c')}"
            )
        )
        assert indexed.scalar() == 72  # the account's every chunk
    assert await tail_rows(engine, account) == 0
    served, _ = await served_per_probe(engine, account, viewed, LookupPath.ACCOUNT_INDEX)
    exact, _ = await served_per_probe(engine, account, viewed, LookupPath.EXACT)
    assert served == exact


async def test_a_merge_empties_the_tail_and_a_stale_mark_still_answers_right(
    engine: AsyncEngine,
) -> None:
    account, viewed, _ = await indexed_world(engine)
    await into_tail(engine, account)
    async with engine.connect() as conn:
        before = await valid_own_index(conn, uuid.UUID(account), IDENTITY)
    assert before is not None and before.watermark is not None
    assert len(await merge_due(engine, 0, [uuid.UUID(account)])) == 1
    assert await tail_rows(engine, account) == 0
    exact, _ = await served_per_probe(engine, account, viewed, LookupPath.EXACT)
    served, _ = await served_per_probe(engine, account, viewed, LookupPath.ACCOUNT_INDEX)
    assert served == exact
    # a process that read the mark before the merge: the rows between the two marks are
    # in the new index, and its text's tail looks them up exactly
    marks = {str(IDENTITY): IndexShape(mark=before.watermark)}
    stale, _ = await served_per_probe(engine, account, viewed, LookupPath.ACCOUNT_INDEX, marks)
    assert stale == exact


def test_only_an_account_with_a_marked_own_index_has_a_tail_in_its_statement() -> None:
    account = uuid.uuid4()
    assert "written_seq" not in first_statement([IDENTITY], account, False)
    marked = first_statement([IDENTITY], account, False, marks={str(IDENTITY): IndexShape(mark=41)})
    assert "coalesce(c.written_seq, 0) <= 41::bigint" in marked
    assert "c.written_seq > 41::bigint" in marked and "place <= :per_probe" in marked
