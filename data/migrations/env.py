"""Alembic environment: runs on the connection that data.migrate hands over."""

from __future__ import annotations

from alembic import context

from data.tables import metadata

connection = context.config.attributes["connection"]
context.configure(connection=connection, target_metadata=metadata, compare_type=True)
with context.begin_transaction():
    context.run_migrations()
