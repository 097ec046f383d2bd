"""An own index's tail (issue #29): the account's comparable rows written after the index's
watermark, looked up exactly beside it (data/account_indexes.py) until a merge builds the
index again over all of them (data/own_index_rebuilds.merge_concurrently). Which tails are
`due`, which the indexer's background leaves resting or to a staged fit's swap, and the
merges of those that are not."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from uuid import UUID

from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine

from data.account_indexes import BuiltIndex, tail_predicate
from data.engine import lift_statement_budget
from data.model_identity import ModelIdentity
from data.own_index_rebuilds import merge_concurrently

# An own index's tail is merged once it holds more rows than the exact-scan size and this
# share of the index's rows.
MERGE_SHARE = 0.05
# The indexer's merges beside the live path (merge_due's `background`) also wait until the
# index has been up this many times as long as its build took, and build by one process:
# a merge builds the whole index again (about 0.6 ms a row of one core, or both cores of a
# small machine for half as long), so under a stream that grows the account, merges at 5%
# alone came ever closer to taking a core of their own. Rested, they take at most
# 1 / (1 + MERGE_REST) of one process's time, and the tail (looked up exactly by the
# account's own comparisons) is what grows instead.
MERGE_REST = 3.0


@dataclass(frozen=True, slots=True)
class Tail:
    """An own index's tail: the account's comparable rows written after its watermark."""

    account_id: UUID
    identity: ModelIdentity
    rows: int
    indexed: int  # the rows the index was built over
    min_rows: int  # the exact-scan size: an exact pass over as many is as fast as an index
    marked: bool = True  # False: built before migration 0012, it has no tail (rows go in)
    up_s: float = 0.0  # how long the index has been up
    build_s: float | None = None  # how long its build took (None: not timed)
    replaced: bool = False  # a lexical fit is staged to replace the one it is of (next_fits)

    @property
    def due(self) -> bool:
        """Whether the tail is worth a merge: more rows than min_rows (every lookup scans
        it), and MERGE_SHARE of the index's rows (a merge builds the whole index again)."""
        return self.rows > max(self.min_rows, MERGE_SHARE * self.indexed)

    @property
    def held_for_swap(self) -> bool:
        """Whether the background leaves the tail to the swap: a fit is staged to replace
        the index's (data/next_fits.py), whose swap registers an index of the new fit, so a
        merge meanwhile would be thrown away within minutes, and it built the whole index
        again beside the stream's passes (38 s at 37,000 rows, every pass five times as long
        meanwhile). Held until the tail is as large as the index: a staged fit that takes
        long to embed (a large account) does not leave its lookups ever longer."""
        return self.replaced and self.rows < self.indexed

    @property
    def rested(self) -> bool:
        """Whether the index has been up MERGE_REST times as long as its build took."""
        return self.rests_s == 0.0

    @property
    def rests_s(self) -> float:
        """How much longer it rests before a merge in the background (0 once rested)."""
        return 0.0 if self.build_s is None else max(0.0, MERGE_REST * self.build_s - self.up_s)


async def tails(
    conn: AsyncConnection, min_rows: int, account_ids: list[UUID] | None = None
) -> list[Tail]:
    """The tail of every registered own index (of these accounts, when given)."""
    rows = await conn.execute(
        text(
            "SELECT r.account_id, r.model_identity, r.watermark, r.chunks_at_build, "
            "extract(epoch FROM clock_timestamp() - r.built_at), r.build_seconds, "
            "coalesce(f.next_identity IS NOT NULL AND f.model_identity = r.model_identity, "
            "  false) "
            "FROM account_model_indexes r LEFT JOIN lexical_fits f "
            "ON f.account_id = r.account_id "
            "WHERE CAST(:accounts AS uuid[]) IS NULL OR r.account_id = ANY(:accounts) "
            "ORDER BY r.account_id, r.model_identity"
        ),
        {"accounts": account_ids},
    )
    found = []
    for account_id, model, watermark, indexed, up_s, build_s, replaced in rows.all():
        identity = ModelIdentity.parse(model)
        if watermark is None:
            found.append(Tail(account_id, identity, 0, int(indexed), min_rows, marked=False))
            continue
        count = f"SELECT count(*) FROM session_chunks c WHERE {tail_predicate(identity, watermark)}"
        n = (await conn.execute(text(count), {"account_id": account_id})).scalar_one()
        found.append(
            Tail(
                account_id,
                identity,
                int(n),
                int(indexed),
                min_rows,
                up_s=float(up_s),
                build_s=build_s,
                replaced=replaced,
            )
        )
    return found


async def merge_due(
    engine: AsyncEngine,
    min_rows: int,
    account_ids: list[UUID] | None = None,
    every: bool = False,
    on_merge: Callable[[Tail, BuiltIndex], None] | None = None,
    background: bool = False,
) -> list[BuiltIndex]:
    """Merge the tail of each own index (of these accounts) that is due, one after the
    other; with `every`, each that has a tail, and each built before migration 0012 (built
    again with a watermark). `on_merge` hears of each. In the `background` (the indexer's,
    beside the live path), a due tail waits until its index has `rested`, and while it is
    `held_for_swap`, and each merge is built by one process (MERGE_REST)."""
    async with engine.connect() as conn:
        await lift_statement_budget(conn)
        found = await tails(conn, min_rows, account_ids)
    merged = []
    workers = 0 if background else None
    for tail in found:
        if not (tail.due or (every and (tail.rows or not tail.marked))):
            continue
        if background and (not tail.rested or tail.held_for_swap):
            continue
        made = await merge_concurrently(engine, tail.account_id, tail.identity, workers=workers)
        if made is not None:
            merged.append(made)
            if on_merge is not None:
                on_merge(tail, made)
    return merged
