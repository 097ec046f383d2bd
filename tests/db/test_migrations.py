"""Migrations: a database stamped with a renamed revision keeps migrating; what the schema's
storage settings keep where."""

from __future__ import annotations

import random
import string

import sqlalchemy as sa
from alembic import command
from alembic.script import ScriptDirectory
from sqlalchemy.ext.asyncio import AsyncEngine

from data.migrate import alembic_config, migrate
from tests.support.world import World, direction, unit


async def test_a_database_stamped_before_the_renumbering_is_restamped(engine: AsyncEngine) -> None:
    async with engine.begin() as conn:  # the schema of 0003, stamped with its old name
        await conn.run_sync(lambda sync: command.downgrade(alembic_config(sync), "0003"))
        await conn.execute(sa.text("UPDATE alembic_version SET version_num = '0002p'"))
    await migrate(engine)
    head = ScriptDirectory.from_config(alembic_config()).get_current_head()
    async with engine.connect() as conn:
        version = (await conn.execute(sa.text("SELECT version_num FROM alembic_version"))).scalar()
        registry = await conn.execute(sa.text("SELECT to_regclass('account_model_indexes')"))
        assert version == head and registry.scalar() is not None


async def test_a_vector_stays_in_its_row_beside_a_long_passage(engine: AsyncEngine) -> None:
    """pgvector stores vectors EXTERNAL: a row past the TOAST threshold moves its largest
    attribute out first, the vector beside a passage of 1 kB, and every exact scan would read
    it through the TOAST table. Stored MAIN, the passage moves out instead."""
    world = World()
    account, _ = world.account()
    session = world.session(account, "a long passage")
    passage = "".join(random.Random(7).choices(string.ascii_letters, k=1000))  # < the vector
    world.chunk(session, unit(direction(3)), index=0, content=passage)
    await world.write(engine)
    async with engine.connect() as conn:
        row = (
            await conn.execute(
                sa.text(
                    "SELECT pg_column_toast_chunk_id(embedding) AS vector_out, "
                    "pg_column_toast_chunk_id(content) AS content_out FROM session_chunks "
                    "WHERE account_id = :a"
                ),
                {"a": account},
            )
        ).one()
    assert row.vector_out is None, "the vector was moved out of its row"
    assert row.content_out is not None, "the passage was meant to pass the threshold"


async def test_the_search_words_written_before_0021_lose_their_credentials(
    engine: AsyncEngine,
) -> None:
    """Downgraded, the words are generated from the content, credentials and all; upgraded
    again, every passage's words are made from its content with them left out."""
    world = World()
    account, _ = world.account()
    text = "deploy refused: password=hunter2-prod and key AKIAIOSFODNN7EXAMPLE"
    for n in range(3):
        world.chunk(world.session(account), unit(direction(n)), content=f"{text} ({n})")
    await world.write(engine)

    async def words() -> str:
        async with engine.connect() as conn:
            rows = await conn.execute(sa.text("SELECT search_terms::text FROM session_chunks"))
            return " ".join(row[0] for row in rows)

    async with engine.begin() as conn:
        await conn.run_sync(lambda sync: command.downgrade(alembic_config(sync), "0020"))
    before = await words()
    assert before.count("hunter2") >= 3 and "akiaiosfodnn7example" in before
    await migrate(engine)
    after = await words()
    assert after.count("'refus'") == 3
    assert "hunter2" not in after and "akia" not in after
