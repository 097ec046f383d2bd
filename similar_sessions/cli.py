"""The `similar-sessions` command line: exit 0 on success, else a one-line reason on stderr."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import sys
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path

from sqlalchemy.ext.asyncio import AsyncEngine

from alerts.manage import UnknownAccount
from alerts.worker import AlertWorker
from config import heap
from config.logs import configure_logging
from config.settings import Settings, SettingsError
from data.account_indexes import BuiltIndex
from data.accounts import revoke_key
from data.engine import make_engine
from data.index_moves import move, to_move
from data.migrate import migrate
from data.model_indexes import BUILT_KIND
from data.own_index_rebuilds import Fitted, fit_all
from data.own_index_tails import Tail, merge_due
from data.server import DatabaseUnavailable, resolve_url
from indexer.embedders import EmbedderUnavailable
from resolvers.errors import BadArgument
from similar_sessions import mcp_stdio
from similar_sessions.alerts_cli import alerts_work
from similar_sessions.cli_arguments import arguments
from similar_sessions.mcp_stdio import KeyRefused
from similar_sessions.serve import PortTaken, serve
from transfer.errors import ImportRefused
from transfer.exporting import export
from transfer.importing import import_file


def open_engine(settings: Settings) -> AsyncEngine:
    return make_engine(
        resolve_url(settings.database_url, settings.data_dir),
        pool_size=settings.pool_size,
        pool_timeout_s=settings.pool_timeout_s,
        statement_timeout_ms=settings.statement_timeout_ms,
    )


async def with_engine(settings: Settings, work: Callable[[AsyncEngine], Awaitable[int]]) -> int:
    engine = open_engine(settings)
    try:
        await migrate(engine)
        return await work(engine)
    finally:
        await engine.dispose()


def cmd_serve(settings: Settings, args: argparse.Namespace) -> int:
    return serve(settings, args.host, args.port, args.workers)


def cmd_migrate(settings: Settings, args: argparse.Namespace) -> int:
    async def work(_: AsyncEngine) -> int:
        print("schema is up to date", file=sys.stderr)
        return 0

    return asyncio.run(with_engine(settings, work))


def cmd_import(settings: Settings, args: argparse.Namespace) -> int:
    for path in args.files:
        if not Path(path).is_file():
            raise FileNotFoundError(f"{path}: no such file")

    async def work(engine: AsyncEngine) -> int:
        for path in args.files:
            imported = await import_file(
                engine,
                Path(path),
                account_index_min_chunks=settings.exact_scan_max_chunks,
                rebuild=settings.import_rebuilds_own_index,
                file_format=args.format,
                account_id=args.account,
            )
            counts = ", ".join(f"{n} {k}" for k, n in imported.counts.items())
            seconds = sum(imported.seconds.values())
            print(f"{path}: {counts} in {seconds:.1f} s", file=sys.stderr)
            for tail in imported.tails:
                if tail.rows:
                    print(f"  {_tail_line(tail)}", file=sys.stderr)
        return 0

    return asyncio.run(with_engine(settings, work))


def _tail_line(tail: Tail) -> str:
    if not tail.due:
        waits = "not due for a merge yet"
    elif tail.held_for_swap:
        waits = "due, the indexer leaves it to the swap of the fit staged to replace this one"
    elif tail.rests_s:
        waits = f"due, the indexer merges it once its index has rested {tail.rests_s:.0f} s more"
    else:
        waits = "due, the indexer merges it"
    return (
        f"account {tail.account_id} {tail.identity}: {tail.rows} rows in its own index's "
        f"tail ({tail.indexed} in the index), looked up exactly; {waits} "
        "(or `similar-sessions merge-indexes`)"
    )


def cmd_merge_indexes(settings: Settings, args: argparse.Namespace) -> int:
    def say(tail: Tail, made: BuiltIndex) -> None:
        what = f"{tail.rows} rows merged" if tail.marked else "built again with a watermark"
        print(
            f"{tail.account_id} {tail.identity}: {what}, {made.chunks} in "
            f"{made.index_name} ({made.seconds:.1f} s), ef_search "
            f"{made.ef_search or f'configured {settings.hnsw_ef_search}'}",
            file=sys.stderr,
        )

    async def work(engine: AsyncEngine) -> int:
        merged = await merge_due(
            engine, settings.exact_scan_max_chunks, every=args.all, on_merge=say
        )
        print(f"merged {len(merged)} own indexes' tails", file=sys.stderr)
        return 0

    return asyncio.run(with_engine(settings, work))


def cmd_move_indexes(settings: Settings, args: argparse.Namespace) -> int:
    async def work(engine: AsyncEngine) -> int:
        indexes = await to_move(engine)
        print(f"{len(indexes)} indexes to move to {BUILT_KIND}", file=sys.stderr)
        for n, index in enumerate(indexes, 1):
            whose = "shared" if index.account_id is None else f"account {index.account_id}'s"
            print(
                f"[{n}/{len(indexes)}] {index.identity}, the {whose} {index.kind} index "
                f"{index.name}: building it again as {BUILT_KIND}, concurrently",
                file=sys.stderr,
                flush=True,
            )
            moved = await move(engine, index)
            if moved is None:
                print("  not built yet: its build makes it", BUILT_KIND, file=sys.stderr)
            else:
                print(
                    f"  {moved.chunks} chunks in {moved.index_name} ({moved.seconds:.1f} s); "
                    "the old index dropped",
                    file=sys.stderr,
                )
        return 0

    return asyncio.run(with_engine(settings, work))


def cmd_export(settings: Settings, args: argparse.Namespace) -> int:
    to_stdout = args.output in (None, "-")
    with (
        contextlib.nullcontext(sys.stdout)
        if to_stdout
        else open(args.output, "w", encoding="utf-8") as out
    ):

        async def work(engine: AsyncEngine) -> int:
            lines = await export(engine, out)
            print(f"exported {lines} lines", file=sys.stderr)
            return 0

        return asyncio.run(with_engine(settings, work))


def cmd_revoke_key(settings: Settings, args: argparse.Namespace) -> int:
    key = sys.stdin.readline().strip()  # from stdin: a key never sits in argv or shell history
    if not key:
        raise SettingsError("revoke-key reads the API key from standard input; none was given")

    async def work(engine: AsyncEngine) -> int:
        async with engine.begin() as conn:
            revoked = await revoke_key(conn, key)
        print("revoked" if revoked else "no such unrevoked key", file=sys.stderr)
        return 0 if revoked else 1

    return asyncio.run(with_engine(settings, work))


def cmd_index(settings: Settings, args: argparse.Namespace) -> int:
    from indexer.commands import run_index

    if args.watch:
        heap.tune()  # the arenas and the mmap threshold, as `serve` sets them (config/heap.py)

    def work(engine: AsyncEngine) -> Awaitable[int]:
        hook = AlertWorker.of(engine, settings) if args.watch else None
        return run_index(engine, settings, args.watch, args.retry_failed, hook)

    return asyncio.run(with_engine(settings, work))


def cmd_alerts(settings: Settings, args: argparse.Namespace) -> int:
    return asyncio.run(with_engine(settings, alerts_work(settings, args)))


def cmd_demo(settings: Settings, args: argparse.Namespace) -> int:
    from indexer.commands import demo_step, run_demo

    embedded = f"the embedded PostgreSQL in {settings.data_dir}"
    demo_step(f"opening the database ({'DATABASE_URL' if settings.database_url else embedded})")

    def work(engine: AsyncEngine) -> Awaitable[int]:
        return run_demo(engine, settings, dense=not args.lexical_only)

    return asyncio.run(with_engine(settings, work))


def cmd_mcp(settings: Settings, args: argparse.Namespace) -> int:
    return asyncio.run(mcp_stdio.run(settings))


def cmd_fit_indexes(settings: Settings, args: argparse.Namespace) -> int:
    def say(fitted: Fitted) -> None:
        account_id, identity, made = fitted
        recall = ", ".join(
            f"ef {ef}: {mean:.3f} (worst {worst:.3f})"
            for ef, (mean, worst) in made.measured.items()
        )
        chosen = made.ef_search or f"configured {settings.hnsw_ef_search}"
        failed = f" (measurement failed: {made.error})" if made.error else ""
        print(f"{account_id} {identity}: ef_search {chosen}{failed}; {recall}", file=sys.stderr)

    async def work(engine: AsyncEngine) -> int:
        fitted = await fit_all(engine, unfitted_only=not args.all, on_fit=say)
        print(f"fitted {len(fitted)} own indexes", file=sys.stderr)
        return 0

    return asyncio.run(with_engine(settings, work))


Command = Callable[[Settings, argparse.Namespace], int]


COMMANDS: dict[str, Command] = {
    "serve": cmd_serve,
    "migrate": cmd_migrate,
    "import": cmd_import,
    "export": cmd_export,
    "revoke-key": cmd_revoke_key,
    "index": cmd_index,
    "demo": cmd_demo,
    "fit-indexes": cmd_fit_indexes,
    "merge-indexes": cmd_merge_indexes,
    "move-indexes": cmd_move_indexes,
    "mcp": cmd_mcp,
    "alerts": cmd_alerts,
}


def _runs_on(args: argparse.Namespace) -> bool:
    """Whether the command runs until stopped (`serve`, `index --watch`), and so is started
    again under the allocator that gives memory back."""
    return bool(args.command == "serve" or (args.command == "index" and args.watch))


def main(argv: Sequence[str] | None = None) -> int:
    args = arguments().parse_args(argv)
    if _runs_on(args) and argv is None:  # the process's own command line
        again = heap.restart()  # under the allocator that gives memory back (config/heap.py)
        if again is not None:
            again.run()
    try:
        settings = Settings.from_env()
        configure_logging(settings.log_level)
        return COMMANDS[args.command](settings, args)
    except (
        SettingsError,
        DatabaseUnavailable,
        ImportRefused,
        FileNotFoundError,
        EmbedderUnavailable,
        PortTaken,
        KeyRefused,
        BadArgument,
        UnknownAccount,
    ) as exc:
        first, *rest = str(exc).splitlines() or [type(exc).__name__]
        print(f"similar-sessions {args.command}: {first}", file=sys.stderr)
        for line in rest:
            print(f"  {line}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main())
