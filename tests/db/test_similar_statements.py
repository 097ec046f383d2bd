"""The statements a request sends: every probe lookup of a page in one statement, and no
content column read when no text is asked."""

from __future__ import annotations

import uuid
from dataclasses import replace

import httpx
import pytest
import sqlalchemy as sa
from sqlalchemy.ext.asyncio import AsyncEngine

from config.settings import Settings
from data import comparison
from data.account_indexes import ensure_account_index
from data.engine import make_engine
from resolvers.tuning import Tuning
from similar_sessions.app import create_app
from tests.support.comparisons import (
    bearer,
    compare,
    counted_statements,
    graphql,
    topic_world,
    transaction_queries,
)
from tests.support.crowded import IDENTITY
from tests.support.loops import ordinary_sessions
from tests.support.world import World, direction, unit


async def test_a_page_of_sessions_sends_one_lookup_statement_a_part(
    client: httpx.AsyncClient, engine: AsyncEngine
) -> None:
    """A page's comparisons are one batch cut into at most page_connections parts (2 by
    default), each of at least 4 comparisons and one lookup statement: the statements do
    not grow with the page."""
    _, key, _ = await topic_world(engine, sessions=40)
    query = (
        "query($n: Int!) { runtimeSessions(first: $n) { nodes { title replay { ordinal }"
        " similarSessions(limit: 3) { results { title session { title } matches { text } } } } } }"
    )
    await graphql(client, key, query, n=1)  # warm: the model catalog is read once per process
    counts = {}
    for n in (2, 7, 20, 40):
        with counted_statements(engine) as statements:
            body = await graphql(client, key, query, n=n)
        assert "errors" not in body
        nodes = body["data"]["runtimeSessions"]["nodes"]
        assert len(nodes) == n and all(node["similarSessions"]["results"] for node in nodes)
        counts[n] = (len([s for s in statements if "<=>" in s]), len(statements))
    assert [counts[n][0] for n in (2, 7, 20, 40)] == [1, 1, 2, 2]
    assert counts[20] == counts[40], "the statement count must not grow with the page"


async def test_a_page_cut_into_parts_answers_as_one_batch_would(
    engine: AsyncEngine, settings: Settings
) -> None:
    """The same page compared on one connection and over three gives the same answers."""
    world = World()
    account, key = world.account()
    sessions = ordinary_sessions(world, account, 24)
    await world.write(engine)
    query = (
        "query($n: Int!) { runtimeSessions(first: $n) { nodes { id similarSessions(limit: 5)"
        " { probeChunks results { session { id } score similarity band } } } } }"
    )
    answers = []
    for connections in (1, 3):
        app = create_app(
            settings.model_copy(update={"page_connections": connections}),
            engine=engine,
            run_migrations=False,
        )
        async with (
            app.router.lifespan_context(app),
            httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://t") as http,
        ):
            answers.append(await graphql(http, key, query, n=len(sessions)))
    assert "errors" not in answers[0]
    assert answers[0]["data"]["runtimeSessions"]["nodes"][0]["similarSessions"]["results"]
    assert answers[0] == answers[1]


async def test_aliases_of_similar_sessions_are_batched_too(
    client: httpx.AsyncClient, engine: AsyncEngine
) -> None:
    _, key, ids = await topic_world(engine, sessions=3)
    query = (
        "query($a: UUID!, $b: UUID!) {"
        " a: runtimeSession(id: $a) { similarSessions { probeChunks } }"
        " b: runtimeSession(id: $b) { similarSessions { probeChunks } } }"
    )
    with counted_statements(engine) as statements:
        body = await graphql(client, key, query, a=ids[0], b=ids[1])
    assert body["data"]["a"]["similarSessions"]["probeChunks"] > 0
    assert len([s for s in statements if "<=>" in s]) == 1


async def test_a_comparison_sends_two_statements_on_its_own_pool(
    engine: AsyncEngine, database_url: str
) -> None:
    """On the comparisons' pool (opened with their settings) a part of a batch, of any size,
    is two statements: everything up to the probe lookups, then what the answers show; and two
    round trips, no BEGIN before them and no ROLLBACK after (`reading`, in autocommit)."""
    _, key, ids = await topic_world(engine, sessions=20)
    settings = Settings.from_env({})
    comparisons = make_engine(database_url, comparison=Tuning.of(settings).comparison_settings)
    app = create_app(settings, engine=engine, comparison_engine=comparisons, run_migrations=False)
    query = (
        "query($n: Int!) { runtimeSessions(first: $n) { nodes {"
        " similarSessions(limit: 3) { results { title matches { text probe { text } } } } } } }"
    )
    try:
        async with httpx.AsyncClient(
            transport=httpx.ASGITransport(app=app), base_url="http://t"
        ) as client:
            await graphql(client, key, query, n=1)  # warm: the model catalog is read once
            for n, parts in ((1, 1), (20, 2)):  # a page of 20: two parts, one a connection
                with (
                    counted_statements(comparisons) as statements,
                    transaction_queries(comparisons) as sent,
                ):
                    body = await graphql(client, key, query, n=n)
                nodes = body["data"]["runtimeSessions"]["nodes"]
                assert all(node["similarSessions"]["results"] for node in nodes)
                lookups = [s for s in statements if "<=>" in s]
                assert (len(statements), len(lookups)) == (2 * parts, parts), statements
                assert "<=>" in statements[0]
                assert sent == []
            with (
                counted_statements(comparisons) as statements,
                transaction_queries(comparisons) as sent,
            ):
                rest = await client.get(
                    f"/api/v1/runtime-sessions/{ids[0]}/similar", headers=bearer(key)
                )
            assert rest.status_code == 200
            assert (len(statements), sent) == (2, [])
            lookup = {"path": "exact", "widened_probes": 0, "checked_probes": 0}
            assert rest.json()["lookup"] == lookup
    finally:
        await comparisons.dispose()


async def test_an_approximate_comparison_that_vouches_for_its_lookups_is_two_statements(
    engine: AsyncEngine, database_url: str
) -> None:
    """Past the exact-scan size, on the account's own index: lookups whose windows vouch for
    their answer are neither asked again nor checked by an exact pass."""
    world = World()
    account, key = world.account()
    sessions = ordinary_sessions(world, account, 60)
    await world.write(engine)
    async with engine.begin() as conn:
        await ensure_account_index(conn, uuid.UUID(account), IDENTITY)
    settings = Settings.from_env({"SIMILAR_SESSIONS_EXACT_SCAN_MAX_CHUNKS": "100"})
    comparisons = make_engine(database_url, comparison=Tuning.of(settings).comparison_settings)
    app = create_app(settings, engine=engine, comparison_engine=comparisons, run_migrations=False)
    path = await compare(engine, account, sessions[1], Tuning.of(settings))
    assert path.lookup_path == "account_index"
    query = "query($id: UUID!) { runtimeSession(id: $id) { similarSessions {"
    query += " results { similarity } degraded { reasons }"
    query += " lookup { path widenedProbes checkedProbes } } } }"
    try:
        async with httpx.AsyncClient(
            transport=httpx.ASGITransport(app=app), base_url="http://t"
        ) as client:
            await graphql(client, key, query, id=sessions[0])  # warm: the model catalog
            for session in sessions[1:4]:
                with counted_statements(comparisons) as statements:
                    body = await graphql(client, key, query, id=session)
                similar = body["data"]["runtimeSession"]["similarSessions"]
                assert similar["results"]
                assert similar["degraded"]["reasons"] == []
                assert similar["lookup"] == {
                    "path": "ACCOUNT_INDEX",
                    "widenedProbes": 0,
                    "checkedProbes": 0,
                }
                assert len(statements) == 2, statements
    finally:
        await comparisons.dispose()


NO_CONTENT_ROLE = "similar_no_content"


async def _no_content_engine(engine: AsyncEngine) -> AsyncEngine:
    """An engine whose role may read every column except the chunks' content."""
    from data.engine import make_engine

    async with engine.begin() as conn:
        database = (await conn.execute(sa.text("SELECT current_database()"))).scalar_one()
        await conn.execute(
            sa.text(
                f"DO $$ BEGIN CREATE ROLE {NO_CONTENT_ROLE} LOGIN; "
                "EXCEPTION WHEN duplicate_object THEN NULL; END $$"
            )
        )
        await conn.execute(sa.text(f'GRANT CONNECT ON DATABASE "{database}" TO {NO_CONTENT_ROLE}'))
        await conn.execute(sa.text(f"GRANT USAGE ON SCHEMA public TO {NO_CONTENT_ROLE}"))
        await conn.execute(
            sa.text(f"GRANT SELECT ON ALL TABLES IN SCHEMA public TO {NO_CONTENT_ROLE}")
        )
        await conn.execute(sa.text(f"REVOKE SELECT ON session_chunks FROM {NO_CONTENT_ROLE}"))
        columns = (
            await conn.execute(
                sa.text(
                    "SELECT string_agg(quote_ident(column_name), ', ') "
                    "FROM information_schema.columns "
                    "WHERE table_name = 'session_chunks' AND column_name <> 'content'"
                )
            )
        ).scalar_one()
        await conn.execute(
            sa.text(f"GRANT SELECT ({columns}) ON session_chunks TO {NO_CONTENT_ROLE}")
        )
    url = engine.url.set(username=NO_CONTENT_ROLE)
    return make_engine(url.render_as_string(hide_password=False))


async def test_include_match_text_false_reads_no_content_column(engine: AsyncEngine) -> None:
    from config.settings import Settings
    from similar_sessions.app import create_app

    _, key, ids = await topic_world(engine, sessions=4)
    restricted = await _no_content_engine(engine)
    app = create_app(Settings.from_env({}), engine=restricted, run_migrations=False)
    transport = httpx.ASGITransport(app=app)
    try:
        async with httpx.AsyncClient(transport=transport, base_url="http://t") as client:
            url = f"/api/v1/runtime-sessions/{ids[0]}/similar"
            ok = await client.get(url, params={"include_match_text": "false"}, headers=bearer(key))
            assert ok.status_code == 200
            matches = [m for r in ok.json()["results"] for m in r["matches"]]
            assert matches and all(m["text"] is None for m in matches)
            # The role really cannot read content: asking for text fails under it.
            with pytest.raises(sa.exc.ProgrammingError, match="permission denied"):
                await client.get(url, headers=bearer(key))
            # A GraphQL client that selects no text reads none, even with includeMatchText true.
            body = await graphql(
                client,
                key,
                "query($id: UUID!) { runtimeSession(id: $id) { similarSessions {"
                " results { title matches { documentId probe { documentId } } } } } }",
                id=ids[0],
            )
            assert "errors" not in body
            assert body["data"]["runtimeSession"]["similarSessions"]["results"]
    finally:
        await restricted.dispose()


async def test_a_sparse_lookup_past_the_floor_is_checked_without_a_wider_search(
    engine: AsyncEngine,
) -> None:
    """Chunks in unrelated directions (cosine near 0): every probe's full window goes past
    the 0.35 floor with fewer than 25 hits. A wider search could not add one, so the exact
    check answers it at once; without a check to make (budget 0) it is widened as before."""
    world = World()
    account, _ = world.account()
    sessions = [world.session(account, f"unrelated {s}", day=s) for s in range(40)]
    for s, session in enumerate(sessions):
        for i in range(4):
            world.chunk(session, unit(direction(1000 + 10 * s + i)), index=i)
    await world.write(engine)
    async with engine.begin() as conn:
        await ensure_account_index(conn, uuid.UUID(account), IDENTITY)
    checked = Tuning(exact_scan_max_chunks=100)
    for tuning, widened in ((checked, False), (replace(checked, verify_timeout_ms=0), True)):
        with counted_statements(engine) as statements:
            result = await compare(engine, account, sessions[0], tuning)
        assert result.lookup_path == "account_index"
        widening = [s for s in statements if s.startswith("SELECT set_config('hnsw.ef_search'")]
        assert bool(widening) is widened, statements
        assert any("SAVEPOINT" in s for s in statements) is not widened, statements


async def test_a_comparison_on_a_pool_opened_with_other_settings_sets_them_for_itself(
    database_url: str,
) -> None:
    """A comparison runs in autocommit (`reading`), where a transaction-local setting would
    last one statement: setting the comparison's own begins the transaction that keeps them.
    (Asked only another ef_search, an account's fit, the connection keeps it for its session
    and says so: tests/db/test_ef_fits.py.)"""
    opened_with = Tuning(ef_search=40)
    asked = Tuning(ef_search=123, comparison_timeout_ms=opened_with.comparison_timeout_ms + 1)
    comparisons = make_engine(database_url, pool_size=1, comparison=opened_with.comparison_settings)
    try:
        async with comparison.reading(comparisons) as conn:
            await comparison.ensure_configured(conn, asked.comparison_settings)
            shown = await conn.execute(sa.text("SHOW hnsw.ef_search"))
            assert shown.scalar_one() == "123"
        async with comparisons.connect() as conn:  # the same connection, as it was opened
            shown = await conn.execute(sa.text("SHOW hnsw.ef_search"))
            assert shown.scalar_one() == "40"
    finally:
        await comparisons.dispose()
