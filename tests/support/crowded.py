"""A crowded multi-tenant world for the lookup tests: one small account among a crowd of
near-identical vectors in other accounts, its probes, and the served per-probe lists."""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from dataclasses import replace

import numpy as np
import sqlalchemy as sa
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine

from data.account_indexes import IndexShape
from data.account_snapshot import read_snapshot
from data.comparison import configure_comparison, look_up
from data.lookups import Ask
from data.model_identity import ModelIdentity
from resolvers.comparison.plans import account_plan, route
from resolvers.rules.lookup_path import LookupPath
from resolvers.rules.lookup_plan import Caller
from resolvers.rules.ranking import probe_positions
from resolvers.tuning import Tuning
from tests.support.world import World, blend, direction
from values.lookups import ComparisonSettings, Limits

IDENTITY = ModelIdentity.parse("local:hash-384@384")
EXACT = Tuning(exact_scan_max_chunks=1_000_000)
INDEX = Tuning(exact_scan_max_chunks=0)


async def crowded_world(engine: AsyncEngine) -> tuple[str, str, list[str]]:
    """One small account among a crowd of near-identical vectors in other accounts, and a
    viewed session whose own chunks are the nearest of all."""
    world = World()
    topic = direction(7)
    account, _ = world.account("small")
    viewed = world.session(account, "viewed")
    for i in range(12):
        world.chunk(viewed, blend(topic, direction(1000 + i), 0.05), index=i)
    others = []
    rng = np.random.default_rng(3)
    for s in range(10):
        other = world.session(account, f"other {s}")
        others.append(other)
        for i in range(6):
            world.chunk(
                other, blend(topic, direction(2000 + s * 10 + i), rng.uniform(0.3, 0.7)), index=i
            )
    for a in range(6):
        crowd_account, _ = world.account(f"crowd {a}")
        for s in range(10):
            crowd = world.session(crowd_account)
            for i in range(20):
                world.chunk(
                    crowd, blend(topic, direction(5000 + a * 1000 + s * 20 + i), 0.1), index=i
                )
    await world.write(engine)
    return account, viewed, others


async def contract_probes(conn: AsyncConnection, viewed: str) -> list[uuid.UUID]:
    """The viewed session's probes at the contract's positions, computed in Python."""
    chunks = (
        (
            await conn.execute(
                sa.text(
                    "SELECT id FROM session_chunks WHERE runtime_session_id = :s "
                    "ORDER BY occurred_at, chunk_index, id"
                ),
                {"s": viewed},
            )
        )
        .scalars()
        .all()
    )
    return [chunks[p] for p in probe_positions(len(chunks))]


async def served_per_probe(
    engine: AsyncEngine,
    account: str,
    viewed: str,
    path: LookupPath,
    marks: Mapping[str, IndexShape] | None = None,
) -> tuple[dict[int, list[uuid.UUID]], list[uuid.UUID]]:
    """The product's per-probe lists for the viewed session, on the given path (its first
    statement run as the plan decides it under the exact-scan size that forces the path;
    with `marks`, the statement's text names these shapes, as a process that read them
    earlier would)."""
    cap = 1_000_000 if path is LookupPath.EXACT else 0
    limits = Limits(per_probe=25, floor=0.35, overfetch=100, exact_scan_max_chunks=cap, probes=8)
    async with engine.begin() as conn:
        probes = await contract_probes(conn, viewed)
        snapshot = await read_snapshot(conn, uuid.UUID(account), cap)
        forcing = Tuning(exact_scan_max_chunks=cap)
        planned = route(
            account_plan(Caller.COMPARISON, forcing, snapshot, uuid.UUID(account)), snapshot
        )
        if marks is not None:
            planned = replace(planned, marks=marks)
        await configure_comparison(conn, ComparisonSettings(10_000, 200))
        ask = Ask(0, uuid.UUID(viewed))
        looked = await look_up(conn, uuid.UUID(account), [ask], [IDENTITY], limits, planned)
    inventory = looked.inventories[0]
    assert inventory is not None
    hits = [h for p in inventory.probes for h in p.answer.hits]
    assert looked.paths[str(IDENTITY)][0] == path.value, "the path asked for was not taken"
    assert [p.chunk_id for p in inventory.probes] == probes, (
        "the statement's probes are the contract's"
    )
    served: dict[int, list[uuid.UUID]] = {n: [] for n in range(len(probes))}
    for row in sorted(hits, key=lambda r: (r.probe, -r.similarity, r.chunk_id)):
        served[row.probe].append(row.chunk_id)
    return served, probes
