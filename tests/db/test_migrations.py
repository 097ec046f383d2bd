"""Migrations: a database stamped with a renamed revision keeps migrating."""

from __future__ import annotations

import sqlalchemy as sa
from alembic import command
from alembic.script import ScriptDirectory
from sqlalchemy.ext.asyncio import AsyncEngine

from data.migrate import alembic_config, migrate


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
