"""The lookup path chosen from the account's size, the account's own index, and plans that
stay on the intended index under prepared statements (never timed)."""

from __future__ import annotations

import asyncio
import json
import re
import uuid
from collections.abc import Mapping

import asyncpg
import pytest
import sqlalchemy as sa
from sqlalchemy.ext.asyncio import AsyncEngine

from data.account_indexes import (
    IndexShape,
    account_index_name,
    ensure_account_index,
    ensure_large_account_indexes,
    valid_own_index,
)
from data.account_snapshot import Snapshots, read_snapshot
from data.comparison_sql import first_statement
from data.fits import drop_unused_model
from data.index_moves import move_indexes, to_move
from data.lookups import Ask
from data.model_identity import ModelIdentity
from data.model_indexes import (
    BUILT_KIND,
    IndexKind,
    beside,
    hnsw_index_ddl,
    index_name,
    register_model,
    shared_predicate,
)
from resolvers.rules import lookup_plan
from resolvers.rules.lookup_path import LookupPath, choose_path
from resolvers.rules.ranking import SIMILAR_PROBE_CHUNKS
from resolvers.tuning import Tuning
from tests.support.comparisons import compare, full_scan
from tests.support.crowded import IDENTITY, crowded_world, served_per_probe


@pytest.mark.parametrize(
    ("own_index", "count", "registered", "expected"),
    [
        (False, 0, False, LookupPath.EXACT),
        (True, 100, True, LookupPath.EXACT),
        (True, 101, True, LookupPath.ACCOUNT_INDEX),
        (False, 101, True, LookupPath.EXACT),  # registered, not ready: out of the shared index
        (False, 101, False, LookupPath.INDEX),
    ],
)
def test_the_path_follows_the_size_then_the_own_index(
    own_index: bool, count: int, registered: bool, expected: LookupPath
) -> None:
    assert choose_path(own_index, count, 100, registered) is expected


async def test_import_builds_own_indexes_only_past_the_size(engine: AsyncEngine) -> None:
    account, _, _ = await crowded_world(engine)  # 72 comparable chunks; crowd accounts 200
    async with engine.begin() as conn:
        built = await ensure_large_account_indexes(conn, 150)
        again = await ensure_large_account_indexes(conn, 150)
    assert len(built) == 6 and again == []
    assert uuid.UUID(account) not in {b.account_id for b in built}
    assert all(b.chunks == 200 for b in built)


async def test_a_large_account_with_its_own_index_takes_the_account_index_path(
    engine: AsyncEngine,
) -> None:
    account, viewed, others = await crowded_world(engine)
    large = Tuning(exact_scan_max_chunks=71)
    assert (await compare(engine, account, viewed, large)).lookup_path == "index"
    async with engine.begin() as conn:
        built = await ensure_account_index(conn, uuid.UUID(account), IDENTITY)
    assert built is not None and built.chunks == 72
    own = await compare(engine, account, viewed, large)
    small = await compare(engine, account, viewed, Tuning(exact_scan_max_chunks=72))
    assert (own.lookup_path, small.lookup_path) == ("account_index", "exact")
    assert [(n.session.id, n.score) for n in own.results] == [
        (n.session.id, n.score) for n in small.results
    ]
    assert {str(n.session.id) for n in own.results} <= set(others)


@pytest.mark.parametrize(
    ("size", "decided", "taken"),
    [
        (1000, LookupPath.INDEX, "index"),  # within the exact scan's size: decided otherwise
        (71, LookupPath.EXACT, "exact"),  # past it, with no index of its own
    ],
)
async def test_the_statement_takes_the_path_the_lookup_rule_decides(
    engine: AsyncEngine,
    monkeypatch: pytest.MonkeyPatch,
    size: int,
    decided: LookupPath,
    taken: str,
) -> None:
    """The rule the product runs is lookup_plan's `choose_path`: change its answer, and the
    comparison's statement follows it (the SQL does not decide again)."""
    account, viewed, _ = await crowded_world(engine)
    tuning = Tuning(exact_scan_max_chunks=size)
    before = await compare(engine, account, viewed, tuning)
    assert before.lookup_path != taken
    monkeypatch.setattr(lookup_plan, "choose_path", lambda *_: decided)
    after = await compare(engine, account, viewed, tuning)
    assert after.lookup_path == taken
    assert [(n.session.id, n.score) for n in after.results] == [
        (n.session.id, n.score) for n in before.results
    ]


async def test_a_snapshot_read_before_the_own_index_was_built_is_answered_exactly(
    engine: AsyncEngine,
) -> None:
    """A process's snapshot planned the shared index; the account has had its own index
    registered since, so rows it writes now leave the shared index: the statement answers on
    the exact path until the snapshot is read again, then on the own index."""
    account, viewed, _ = await crowded_world(engine)
    large = Tuning(exact_scan_max_chunks=71)
    snapshots = Snapshots(ttl_s=3600)
    assert (await compare(engine, account, viewed, large, snapshots)).lookup_path == "index"
    async with engine.begin() as conn:
        await ensure_account_index(conn, uuid.UUID(account), IDENTITY)
    stale = await compare(engine, account, viewed, large, snapshots)
    exact = await compare(engine, account, viewed, Tuning(exact_scan_max_chunks=72))
    assert (stale.lookup_path, exact.lookup_path) == ("exact", "exact")
    assert [(n.session.id, n.score) for n in stale.results] == [
        (n.session.id, n.score) for n in exact.results
    ]
    snapshots.forget(uuid.UUID(account))
    assert (await compare(engine, account, viewed, large, snapshots)).lookup_path == (
        "account_index"
    )


async def test_account_index_path_equals_the_full_scan_despite_the_crowd(
    engine: AsyncEngine,
) -> None:
    account, viewed, _ = await crowded_world(engine)
    async with engine.begin() as conn:
        await ensure_account_index(conn, uuid.UUID(account), IDENTITY)
    served, probes = await served_per_probe(engine, account, viewed, LookupPath.ACCOUNT_INDEX)
    for n, probe in enumerate(probes):
        assert served[n] == await full_scan(engine, account, probe), f"probe {n} differs"


async def test_exact_path_recall_is_one_on_every_probe_of_every_session(
    engine: AsyncEngine,
) -> None:
    account, viewed, others = await crowded_world(engine)
    for session in [viewed, *others[:3]]:
        served, probes = await served_per_probe(engine, account, session, LookupPath.EXACT)
        for n, probe in enumerate(probes):
            assert served[n] == await full_scan(engine, account, probe)


def _positional(sql: str) -> tuple[str, list[str]]:
    """SQLAlchemy's :name parameters as $n, with the names in order."""
    names: list[str] = []

    def number(match: re.Match[str]) -> str:
        if match[1] not in names:
            names.append(match[1])
        return f"${names.index(match[1]) + 1}"

    return re.sub(r"(?<![:\w]):([a-z][a-z_0-9]*)", number, sql), names


def _literal(value: object) -> str:
    if value is None:
        return "NULL"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, list):
        return "ARRAY[" + ",".join(f"'{v}'" for v in value) + "]::text[]"
    if isinstance(value, str):
        return "'" + value.replace("'", "''") + "'"
    if isinstance(value, uuid.UUID):
        return f"'{value}'::uuid"
    return repr(value)


async def _plan_after_executions(
    database_url: str,
    account: str,
    viewed: str,
    cache_mode: str,
    marks: Mapping[str, IndexShape] | None = None,
) -> str:
    """Prepare the comparison's first statement on an approximate path (the account's own
    indexes at these watermarks), execute it ten times under cache_mode, then EXPLAIN the
    plan the eleventh execution would use."""
    conn = await asyncpg.connect(database_url.replace("postgresql+asyncpg://", "postgresql://"))
    try:
        statement = first_statement([IDENTITY], uuid.UUID(account), False, marks=marks)
        sql, names = _positional(statement)
        values: dict[str, object] = {
            "account_id": uuid.UUID(account),
            "asks": json.dumps([Ask(0, uuid.UUID(viewed)).as_json()]),
            "branch_models": [str(IDENTITY)],
            "probes": SIMILAR_PROBE_CHUNKS,
            # the approximate path the plan decides on an account past the exact scan's size
            "paths": json.dumps({str(IDENTITY): ["account_index" if marks else "index", 0]}),
            "per_probe": 25,
            "floor_0": 0.35,
            "overfetch": 100,
        }
        arguments = ", ".join(_literal(values[name]) for name in names)
        # Statistics as a server has them, not left to when autovacuum gets to the new rows:
        # with them, a 72-chunk account's cheapest plan was a bitmap scan and a sort, taken
        # or not by the timing of autovacuum's ANALYZE (a flaky test).
        await conn.execute("ANALYZE session_chunks")
        async with conn.transaction():
            await conn.execute(
                "SELECT set_config('hnsw.iterative_scan', 'relaxed_order', true), "
                f"set_config('plan_cache_mode', '{cache_mode}', true)"
            )
            # the tables are small: keep the planner off the scans and sorts that would order
            # them without an index, so that the plan shows which HNSW index it can prove
            # usable, which is what may regress
            await conn.execute("SET LOCAL enable_seqscan = off")
            await conn.execute("SET LOCAL enable_bitmapscan = off")
            await conn.execute("SET LOCAL enable_sort = off")
            await conn.execute(f"PREPARE probe_lookup AS {sql}")
            for _ in range(10):
                await conn.fetch(f"EXECUTE probe_lookup({arguments})")
            plan = await conn.fetch(f"EXPLAIN (COSTS OFF) EXECUTE probe_lookup({arguments})")
            await conn.execute("DEALLOCATE probe_lookup")
        return "\n".join(r[0] for r in plan)
    finally:
        await conn.close()


@pytest.mark.parametrize("cache_mode", ["force_custom_plan", "auto", "force_generic_plan"])
async def test_the_account_index_stays_in_the_plan_after_repeated_executions(
    engine: AsyncEngine, database_url: str, cache_mode: str
) -> None:
    account, viewed, _ = await crowded_world(engine)
    async with engine.begin() as conn:
        await ensure_account_index(conn, uuid.UUID(account), IDENTITY)
        # The import builds the shared index after the rows, which gives the table its
        # statistics; with them, pgvector's costing prefers the shared index for an account
        # this small (72 chunks; own indexes are built past 1,000). Without it, the plan
        # shows whether the own index is provably usable under each cache mode.
        await conn.execute(sa.text(f"DROP INDEX {index_name(IDENTITY)}"))
        marks = (await read_snapshot(conn, uuid.UUID(account), 0)).marks
    assert marks[str(IDENTITY)].mark is not None  # the index holds the rows up to its mark
    plan = await _plan_after_executions(database_url, account, viewed, cache_mode, marks)
    assert account_index_name(uuid.UUID(account), IDENTITY) in plan, plan


async def test_the_shared_index_stays_in_the_plan_under_the_products_cache_mode(
    engine: AsyncEngine, database_url: str
) -> None:
    account, viewed, _ = await crowded_world(engine)
    plan = await _plan_after_executions(database_url, account, viewed, "force_custom_plan")
    assert index_name(IDENTITY) in plan, plan


async def _as_built_before_kinds(engine: AsyncEngine, account: str) -> tuple[str, str]:
    """The shared index, and the account's own, built again as migration 0015 found them:
    `vector` indexes registered as such. Their names."""
    account_id = uuid.UUID(account)
    async with engine.begin() as conn:
        await ensure_account_index(conn, account_id, IDENTITY)
        own = await valid_own_index(conn, account_id, IDENTITY)
        assert own is not None and own.kind is BUILT_KIND is IndexKind.HALFVEC
        shared = index_name(IDENTITY, IndexKind.VECTOR)
        for name, predicate in (
            (own.name, own.predicate(account_id, IDENTITY)),
            (shared, shared_predicate(IDENTITY)),
        ):
            await conn.execute(sa.text(f"DROP INDEX IF EXISTS {name}"))
            ddl = hnsw_index_ddl(name, IDENTITY, predicate, kind=IndexKind.VECTOR)
            await conn.execute(sa.text(ddl))
        await conn.execute(sa.text(f"DROP INDEX {index_name(IDENTITY)}"))
        await conn.execute(
            sa.text(
                "UPDATE embedding_models SET index_name = :n, index_kind = 'vector' "
                "WHERE model_identity = :m"
            ),
            {"n": shared, "m": str(IDENTITY)},
        )
        await conn.execute(
            sa.text(
                "UPDATE account_model_indexes SET index_kind = 'vector' "
                "WHERE account_id = :a AND model_identity = :m"
            ),
            {"a": account_id, "m": str(IDENTITY)},
        )
    return shared, own.name


async def _exists(engine: AsyncEngine, name: str) -> bool:
    async with engine.connect() as conn:
        found = await conn.execute(sa.text("SELECT to_regclass(:n) IS NOT NULL"), {"n": name})
        return bool(found.scalar_one())


async def test_indexes_of_the_kind_built_before_serve_until_moved_then_the_new_kind_serves(
    engine: AsyncEngine, database_url: str
) -> None:
    account, viewed, _ = await crowded_world(engine)
    exact, _ = await served_per_probe(engine, account, viewed, LookupPath.EXACT)
    shared, own = await _as_built_before_kinds(engine, account)
    async with engine.connect() as conn:
        marks = (await read_snapshot(conn, uuid.UUID(account), 0)).marks
    assert marks[str(IDENTITY)].own_kind is marks[str(IDENTITY)].shared_kind is IndexKind.VECTOR
    assert own in await _plan_after_executions(database_url, account, viewed, "auto", marks)
    before, _ = await served_per_probe(engine, account, viewed, LookupPath.ACCOUNT_INDEX)

    moved = await move_indexes(engine, grace_s=0)

    assert [(m.was.account_id, m.was.kind) for m in moved] == [
        (None, IndexKind.VECTOR),
        (uuid.UUID(account), IndexKind.VECTOR),
    ]
    assert not await _exists(engine, shared) and not await _exists(engine, own)
    async with engine.connect() as conn:
        marks = (await read_snapshot(conn, uuid.UUID(account), 0)).marks
        now = await valid_own_index(conn, uuid.UUID(account), IDENTITY)
    assert marks[str(IDENTITY)].own_kind is marks[str(IDENTITY)].shared_kind is BUILT_KIND
    assert now is not None and now.kind is BUILT_KIND and now.name == moved[1].index_name
    assert now.name in await _plan_after_executions(database_url, account, viewed, "auto", marks)
    after, _ = await served_per_probe(engine, account, viewed, LookupPath.ACCOUNT_INDEX)
    assert before == after == exact, "either kind answers as the exact path does"
    assert await move_indexes(engine, grace_s=0) == [], "nothing is left to move"


async def test_a_moved_index_is_dropped_only_after_the_grace(engine: AsyncEngine) -> None:
    """Other processes order by the kind they read, for up to INDEX_TTL_S: the old index
    stays that long after the new one is registered."""
    account, _, _ = await crowded_world(engine)
    shared, _ = await _as_built_before_kinds(engine, account)
    moving = asyncio.create_task(move_indexes(engine, grace_s=3.0))
    for _ in range(3000):
        async with engine.connect() as conn:
            kind = await conn.execute(
                sa.text("SELECT index_kind FROM embedding_models WHERE model_identity = :m"),
                {"m": str(IDENTITY)},
            )
            if kind.scalar_one() == BUILT_KIND.value:
                break
        await asyncio.sleep(0.01)
    assert await _exists(engine, shared), "the old index was dropped as the new one registered"
    await moving
    assert not await _exists(engine, shared)


async def test_a_shared_index_that_holds_repeats_is_built_again_beside_itself(
    engine: AsyncEngine, database_url: str
) -> None:
    """The shared index as migration 0015 left it (of the built kind, its predicate keeping a
    loop's repeats) is listed, built again beside itself, and takes its own name back; the
    lookups answer as before and nothing is left to move."""
    account, viewed, _ = await crowded_world(engine)
    exact, _ = await served_per_probe(engine, account, viewed, LookupPath.EXACT)
    name = index_name(IDENTITY)
    async with engine.begin() as conn:
        await conn.execute(sa.text(f"DROP INDEX {name}"))
        held = shared_predicate(IDENTITY, repeats=True)
        await conn.execute(sa.text(hnsw_index_ddl(name, IDENTITY, held, kind=BUILT_KIND)))
    assert [(i.account_id, i.name) for i in await to_move(engine)] == [(None, name)]

    moved = await move_indexes(engine, grace_s=0)

    assert [(m.was.name, m.index_name) for m in moved] == [(name, name)]
    async with engine.connect() as conn:
        definitions = await conn.execute(
            sa.text("SELECT indexname, indexdef FROM pg_indexes WHERE indexname LIKE :n"),
            {"n": name + "%"},
        )
        [(now, definition)] = definitions.all()
        registered = await conn.execute(
            sa.text(
                "SELECT index_name, index_kind FROM embedding_models WHERE model_identity = :m"
            ),
            {"m": str(IDENTITY)},
        )
        assert registered.one() == (name, BUILT_KIND.value)
    assert now == name and " AND (repeat_of IS NULL)" in definition
    assert name in await _plan_after_executions(database_url, account, viewed, "force_custom_plan")
    after, _ = await served_per_probe(engine, account, viewed, LookupPath.INDEX)
    assert after == exact
    assert await to_move(engine) == []


async def test_a_retired_model_leaves_no_shared_index_behind(engine: AsyncEngine) -> None:
    """A model no chunk holds any more is dropped with every shared index it may have left:
    its registered one, and one a move that failed left beside it, unregistered."""
    retired = ModelIdentity.parse("local:retired-384@384")
    name = index_name(retired)
    async with engine.begin() as conn:
        assert await register_model(conn, retired)
        for each in (name, beside(name)):
            await conn.execute(sa.text(hnsw_index_ddl(each, retired, shared_predicate(retired))))
    assert await _exists(engine, name) and await _exists(engine, beside(name))
    async with engine.begin() as conn:
        assert await drop_unused_model(conn, str(retired))
    assert not await _exists(engine, name) and not await _exists(engine, beside(name))
