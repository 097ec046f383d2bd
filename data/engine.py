"""The async engine: asyncpg under SQLAlchemy, every statement bounded in time.

Vectors travel in pgvector's text form through the `Vector` column type
(pgvector.sqlalchemy); the one per-connection codec is for times (data/times.py), so that
every instant from year 1 to 9999 is stored and read as itself."""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from functools import lru_cache
from typing import Any

from sqlalchemy import event, text
from sqlalchemy.dialects.postgresql import JSONB
from sqlalchemy.engine import ExceptionContext
from sqlalchemy.exc import DBAPIError, DisconnectionError, OperationalError
from sqlalchemy.exc import TimeoutError as PoolTimeout
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine, create_async_engine
from sqlalchemy.pool import AsyncAdaptedQueuePool, ConnectionPoolEntry, PoolProxiedConnection
from sqlalchemy.sql.selectable import TextualSelect

from data.errors import StatementTimedOut, Unavailable
from data.times import exchange_times_exactly
from observability.metrics import POOL_WAIT, STATEMENT_TIMEOUTS
from values.lookups import ComparisonSettings

QUERY_CANCELED = "57014"  # SQLSTATE of a statement cancelled by its statement_timeout
STATEMENTS_KEPT = 1024  # built statements kept (the comparison's first is per account)


@lru_cache(maxsize=STATEMENTS_KEPT)
def json_statement(sql: str, column: str) -> TextualSelect:
    """A textual statement whose `column` comes back as JSONB, built once per text: building
    one parses its bind parameters (0.4 ms for the comparison's first statement)."""
    return text(sql).columns(**{column: JSONB})


class TimedPool(AsyncAdaptedQueuePool):
    """The usual pool, timing how long each checkout waits for a connection; no connection
    free in time is Unavailable."""

    def _do_get(self) -> ConnectionPoolEntry:
        started = time.perf_counter()
        try:
            return super()._do_get()
        except PoolTimeout as exc:
            raise Unavailable("pool_timeout") from exc
        finally:
            POOL_WAIT.observe(time.perf_counter() - started)


def _connect(dialect: Any, _: ConnectionPoolEntry, cargs: Any, cparams: Any) -> Any:
    """A connection made as the dialect makes it; a socket the server is not listening on
    (refused, reset, no such Unix socket) is Unavailable, where the driver raises it raw.
    The driver's own errors are translated by `_as_domain_error`."""
    try:
        return dialect.connect(*cargs, **cparams)
    except OSError as exc:
        raise Unavailable() from exc


def _as_domain_error(context: ExceptionContext) -> None:
    """A statement cancelled by its budget is StatementTimedOut, and an error that means the
    database cannot answer right now is Unavailable (SQLAlchemy cleans up first: a lost
    connection is still invalidated). Anything else stays the driver's error."""
    raised = context.sqlalchemy_exception or context.original_exception
    if is_query_canceled(raised):
        STATEMENT_TIMEOUTS.inc()
        raise StatementTimedOut() from raised
    if is_unavailable(raised):
        raise Unavailable() from raised


def make_engine(
    url: str,
    *,
    pool_size: int = 5,
    pool_timeout_s: int = 5,
    statement_timeout_ms: int = 5000,
    comparison: ComparisonSettings | None = None,
) -> AsyncEngine:
    """An engine whose every statement is bounded; with `comparison`, its connections carry
    the comparison's settings (and say so in `connection.info["comparison"]`)."""
    server_settings = {
        "statement_timeout": str(statement_timeout_ms),
        "application_name": "similar-sessions",
        "TimeZone": "UTC",  # times inside JSON answers are written with +00:00
        **(comparison.server_settings() if comparison else {}),
    }
    engine = create_async_engine(
        url,
        poolclass=TimedPool,
        pool_size=pool_size,
        max_overflow=0,
        pool_timeout=pool_timeout_s,
        # No ping per checkout (a round trip): a connection the server closed is replaced at
        # checkout by `_closed_by_server` below, which asks asyncpg what the socket said.
        pool_pre_ping=False,
        # An error's message never quotes a statement's parameters (they hold content).
        hide_parameters=True,
        connect_args={
            "timeout": pool_timeout_s,  # a server that does not answer fails fast, not in 60 s
            "server_settings": server_settings,
        },
    )
    if comparison is not None:

        def mark(_: Any, record: ConnectionPoolEntry) -> None:
            record.info["comparison"] = comparison

        event.listen(engine.sync_engine, "connect", mark)
    event.listen(engine.sync_engine, "do_connect", _connect)
    event.listen(engine.sync_engine, "connect", _exchange_times_exactly)
    event.listen(engine.sync_engine, "handle_error", _as_domain_error)
    event.listen(engine.sync_engine, "checkout", _closed_by_server)
    return engine


def _exchange_times_exactly(dbapi_connection: Any, _: ConnectionPoolEntry) -> None:
    dbapi_connection.run_async(exchange_times_exactly)


def _closed_by_server(_: Any, record: ConnectionPoolEntry, proxy: PoolProxiedConnection) -> None:
    """A pooled connection whose server went away (a restart, a terminated backend) is known
    closed to asyncpg as soon as the event loop reads the socket's end: raising here makes the
    pool discard it and check out another, without the round trip a ping would cost. A
    connection lost without the socket saying so fails its statement, is invalidated with the
    pool's older connections, and the request answers 503 with Retry-After."""
    driver = proxy.driver_connection
    if driver is not None and driver.is_closed():
        raise DisconnectionError("the server closed this connection")


async def ping(engine: AsyncEngine) -> None:
    """One trivial statement: raises when the database cannot answer."""
    async with engine.connect() as conn:
        await conn.execute(text("SELECT 1"))


async def lift_statement_budget(conn: AsyncConnection) -> None:
    """No statement timeout until the transaction ends: for maintenance, not requests (an
    import's COPY of gigabytes and upserts of millions of rows, an index build and the count
    before it)."""
    await conn.execute(text("SELECT set_config('statement_timeout', '0', true)"))


def is_query_canceled(exc: BaseException) -> bool:
    """A statement cancelled because it ran past its statement_timeout."""
    return isinstance(exc, DBAPIError) and getattr(exc.orig, "sqlstate", None) == QUERY_CANCELED


def is_out_of_resources(exc: BaseException) -> bool:
    """A statement the server could not give what it needed (SQLSTATE class 53: disk full,
    out of memory, temp_file_limit, too many connections)."""
    code = getattr(getattr(exc, "orig", None), "sqlstate", None)
    return isinstance(exc, DBAPIError) and isinstance(code, str) and code.startswith("53")


# SQLSTATEs of a server that cannot answer right now but will: connection exceptions (08),
# too many connections, a cancelled statement, shutting down or crashed (57P01, 57P02), and
# starting up or recovering (57P03, CannotConnectNowError).
_RETRY_LATER = ("08", "53300", QUERY_CANCELED, "57P01", "57P02", "57P03")
_RETRY_LATER_NAMES = {"ConnectionDoesNotExistError", "CannotConnectNowError", "InterfaceError"}


def _causes(exc: BaseException) -> list[BaseException]:
    """The error, what SQLAlchemy wrapped (orig) and what it was raised from, in order."""
    chain: list[BaseException] = []
    current: BaseException | None = exc
    while current is not None and current not in chain and len(chain) < 8:
        chain.append(current)
        orig = getattr(current, "orig", None)
        current = orig if isinstance(orig, BaseException) else current.__cause__
    return chain


@contextmanager
def raw_driver_errors() -> Iterator[None]:
    """On a raw connection (the pool's, used without SQLAlchemy's execution), the driver's
    errors that mean the database cannot answer right now become Unavailable."""
    try:
        yield
    except Unavailable:
        raise
    except Exception as exc:
        if is_unavailable(exc):
            raise Unavailable() from exc
        raise


def is_unavailable(exc: BaseException) -> bool:
    """Errors that mean the database cannot answer right now (503, not 500): unreachable,
    starting up or recovering, its connection lost, or a statement past its time budget;
    raised by asyncpg or wrapped by SQLAlchemy alike."""
    if isinstance(exc, DBAPIError) and exc.connection_invalidated:
        return True
    for cause in _causes(exc):
        if isinstance(cause, PoolTimeout | OperationalError | OSError | ConnectionError):
            return True
        sqlstate = getattr(cause, "sqlstate", None)
        if isinstance(sqlstate, str) and sqlstate.startswith(_RETRY_LATER):
            return True
        if type(cause).__name__ in _RETRY_LATER_NAMES:
            return True
    return False
