"""The ef_search fitted on an account's own index (issue #29): measured against an exact scan
when the index is built and registered beside it; the account's comparisons then search at
it, and answer as they do at the configured one."""

from __future__ import annotations

import asyncio
import subprocess
import sys
import uuid
from dataclasses import replace
from typing import Any

import pytest
import sqlalchemy as sa
from sqlalchemy.exc import DBAPIError
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine

from data import comparison, ef_fits
from data.account_indexes import ensure_account_index
from data.engine import make_engine
from data.model_indexes import BUILT_KIND
from data.own_index_rebuilds import fit_all
from tests.support.comparisons import transaction_queries
from tests.support.crowded import IDENTITY
from tests.support.loop_world import APPROXIMATE, EXACT, compared, listed
from tests.support.loops import ordinary_sessions
from tests.support.tails import into_tail
from tests.support.world import World
from values.lookups import ComparisonSettings


async def fitted_world(engine: AsyncEngine) -> tuple[str, list[str]]:
    """Sixteen sessions of 8 chunks on three topics (past APPROXIMATE's exact-scan size),
    the account with its own index."""
    world = World()
    account, _ = world.account()
    sessions = ordinary_sessions(world, account, 16)
    await world.write(engine)
    async with engine.begin() as conn:
        await ensure_account_index(conn, uuid.UUID(account), IDENTITY)
    return account, sessions


async def registered_fit(engine: AsyncEngine, account: str) -> tuple[int | None, Any]:
    async with engine.connect() as conn:
        row = await conn.execute(
            sa.text("SELECT ef_search, ef_fit FROM account_model_indexes WHERE account_id = :a"),
            {"a": account},
        )
        ef_search, fit = row.one()
    return ef_search, fit


async def test_a_built_index_is_fitted_against_an_exact_scan(engine: AsyncEngine) -> None:
    account, _ = await fitted_world(engine)
    ef_search, fit = await registered_fit(engine, account)
    # 128 chunks: a search of 100 wide finds every nearest chunk, so the lowest candidate holds
    assert fit["samples"] == ef_fits.FIT_SAMPLES
    assert fit["recall"] == {str(ef): [1.0, 1.0] for ef in ef_fits.FIT_CANDIDATES}
    assert ef_search == fit["ef_search"] == 100


async def test_an_index_no_candidate_holds_on_keeps_the_configured_ef_search(
    engine: AsyncEngine, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(ef_fits, "FIT_MIN_RECALL", 1.01)  # no recall can hold
    account, session = await fitted_world(engine)
    ef_search, fit = await registered_fit(engine, account)
    assert ef_search is None and fit["ef_search"] is None and fit["recall"]["100"] == [1.0, 1.0]
    widths = record_widths(monkeypatch)
    await compared(engine, account, session[0], APPROXIMATE)
    assert widths == ["400"]


def record_widths(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The hnsw.ef_search each comparison's statements run at, as the server shows it."""
    shown: list[str] = []
    real = comparison.ensure_configured

    async def configure_and_show(conn: AsyncConnection, settings: ComparisonSettings) -> None:
        await real(conn, settings)
        shown.append((await conn.execute(sa.text("SHOW hnsw.ef_search"))).scalar_one())

    monkeypatch.setattr(comparison, "ensure_configured", configure_and_show)
    return shown


async def test_comparisons_on_the_account_search_at_its_fit_and_answer_the_same(
    engine: AsyncEngine, monkeypatch: pytest.MonkeyPatch
) -> None:
    account, sessions = await fitted_world(engine)
    widths = record_widths(monkeypatch)
    configured = replace(APPROXIMATE, ef_search_fitted=False)
    for session in sessions[:4]:
        widths.clear()
        fitted = await compared(engine, account, session, APPROXIMATE)
        unfitted = await compared(engine, account, session, configured)
        assert widths == ["100", "400"]
        exact = await compared(engine, account, session, EXACT)
        assert fitted.lookup_path == unfitted.lookup_path == "account_index"
        assert listed(fitted) == listed(unfitted) == listed(exact)


async def test_a_fit_at_or_above_the_configured_ef_search_leaves_it(
    engine: AsyncEngine, monkeypatch: pytest.MonkeyPatch
) -> None:
    account, sessions = await fitted_world(engine)
    widths = record_widths(monkeypatch)
    await compared(engine, account, sessions[0], replace(APPROXIMATE, ef_search=90))
    assert widths == ["90"]


async def test_a_comparisons_connection_keeps_the_fit_for_its_session(
    engine: AsyncEngine, database_url: str
) -> None:
    """A connection opened with the comparisons' settings is set to the account's fit once,
    outside a transaction, and says so: the next comparison of the account sends nothing
    before its statements, and one of an unfitted account sets it back."""
    account, sessions = await fitted_world(engine)
    other, others = await fitted_world(engine)
    async with engine.begin() as conn:
        await conn.execute(
            sa.text("UPDATE account_model_indexes SET ef_search = NULL WHERE account_id = :a"),
            {"a": other},
        )
    comparisons = make_engine(database_url, pool_size=1, comparison=APPROXIMATE.comparison_settings)
    try:
        for compared_account, session, width in [
            (account, sessions[0], "100"),
            (account, sessions[1], "100"),
            (other, others[0], "400"),
        ]:
            with transaction_queries(comparisons) as sent:
                await compared(comparisons, compared_account, session, APPROXIMATE)
            assert sent == []  # in autocommit, no transaction begun for the setting
            async with comparisons.connect() as conn:
                assert (await conn.execute(sa.text("SHOW hnsw.ef_search"))).scalar() == width
                assert conn.info["comparison"].ef_search == int(width)
    finally:
        await comparisons.dispose()


async def test_indexes_built_before_fits_are_fitted_by_fit_all(engine: AsyncEngine) -> None:
    account, _ = await fitted_world(engine)
    async with engine.begin() as conn:
        await conn.execute(
            sa.text("UPDATE account_model_indexes SET ef_search = NULL, ef_fit = NULL")
        )
    fitted = await fit_all(engine)
    assert [(str(a), i, f.ef_search) for a, i, f in fitted] == [(account, IDENTITY, 100)]
    assert (await registered_fit(engine, account))[0] == 100
    assert await fit_all(engine) == []  # all fitted: nothing again unless asked
    assert len(await fit_all(engine, unfitted_only=False)) == 1


async def test_a_failed_measurement_leaves_the_index_built_and_unfitted(
    engine: AsyncEngine, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The fit is an optimisation: a measurement the server cannot finish fits nothing, says
    why, and the build it follows (here in the caller's transaction) stands."""

    async def out_of_memory(*_: object) -> None:
        raise DBAPIError("SELECT ...", {}, MemoryError("no memory for the exact scan"))

    monkeypatch.setattr(ef_fits, "_nearest", out_of_memory)
    account, sessions = await fitted_world(engine)
    ef_search, fit = await registered_fit(engine, account)
    assert ef_search is None and fit["samples"] == 0 and fit["error"] == "MemoryError"
    assert (await compared(engine, account, sessions[0], APPROXIMATE)).lookup_path == (
        "account_index"
    )


def _command(database_url: str, *args: str) -> list[str]:
    """`similar-sessions ARGS` as a process on the database: its stderr lines (exit 0)."""
    done = subprocess.run(
        [sys.executable, "-m", "similar_sessions.cli", *args],
        env={"DATABASE_URL": database_url, "PATH": "/usr/bin:/bin"},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    return done.stderr.splitlines()


def test_the_fit_command_names_each_index_as_it_is_fitted(database_url: str) -> None:
    """`similar-sessions fit-indexes --all` on a database with one fitted account index."""
    asyncio.run(_one_fitted_index(database_url))
    lines = _command(database_url, "fit-indexes", "--all")
    assert lines[-1] == "fitted 1 own indexes"
    assert f"{IDENTITY}: ef_search 100; ef 100: 1.000 (worst 1.000)" in lines[0]


async def _one_fitted_index(database_url: str) -> None:
    engine = make_engine(database_url)
    try:
        await fitted_world(engine)
    finally:
        await engine.dispose()


def test_the_merge_command_names_each_tail_it_merges(database_url: str) -> None:
    """`similar-sessions merge-indexes --all` on a database with one own index and a tail."""
    asyncio.run(_one_index_with_a_tail(database_url))
    lines = _command(database_url, "merge-indexes", "--all")
    assert lines[-1] == "merged 1 own indexes' tails"
    assert f"{IDENTITY}: " in lines[0] and " rows merged, " in lines[0], lines


async def _one_index_with_a_tail(database_url: str) -> None:
    engine = make_engine(database_url)
    try:
        account, _ = await fitted_world(engine)
        assert await into_tail(engine, account) > 0
    finally:
        await engine.dispose()


def test_the_move_command_says_what_it_has_to_move(database_url: str) -> None:
    """`similar-sessions move-indexes` where every index is already of the kind built now
    (the moves themselves: tests/db/test_lookup_paths.py)."""
    asyncio.run(_one_fitted_index(database_url))
    assert _command(database_url, "move-indexes") == [f"0 indexes to move to {BUILT_KIND}"]
