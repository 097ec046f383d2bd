"""`import`: a file streamed once into a staging table (one binary COPY, parsing and writing
overlapped), checked as a set, then upserted set-based and indexed, all in one transaction:
all of the file or, on any bad line, none of it. Memory stays flat whatever the file size.
The file's rows of an account with its own index are that index's tail (they are not
inserted into its graph one by one, data/account_indexes.py): looked up exactly until a
merge builds the index again in one pass, concurrently, which the indexer does once the tail
is due (or the import after its commit, with SIMILAR_SESSIONS_IMPORT_REBUILDS_OWN_INDEX;
data/own_index_rebuilds.py)."""

from __future__ import annotations

import os
import time
from collections.abc import AsyncIterator, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any
from uuid import UUID

import structlog
from sqlalchemy.exc import DBAPIError
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine
from tqdm import tqdm

from data import import_rows, staging
from data import tables as t
from data.account_indexes import ensure_large_account_indexes
from data.engine import lift_statement_budget
from data.model_identity import ModelIdentity
from data.model_indexes import build_model_index, register_model
from data.own_index_rebuilds import (
    OwnIndexPlan,
    fit_again,
    merge_concurrently,
    plan_own_indexes,
    rebuild_concurrently,
)
from data.own_index_tails import Tail, tails
from data.repeats import mark_repeats
from transfer.errors import MAX_REPORTED_ERRORS, ErrorLog
from transfer.formats import FORMATS
from transfer.import_format import AccountRecord, ChunkRecord, Record
from transfer.staged import account_problems, conflict_reason, outside_account, stage_row

log = structlog.get_logger(__name__)
MAX_LINE_BYTES = 64 * 1024**2
KINDS = ("session", "activity", "chunk")


@dataclass
class Imported:
    """What a file held (lines by kind), what changed (rows inserted or updated by kind),
    the indexes built, and seconds by phase."""

    lines: dict[str, int] = field(default_factory=lambda: dict.fromkeys(("account", *KINDS), 0))
    changed: dict[str, int] = field(default_factory=dict)
    indexes: list[str] = field(default_factory=list)
    # the tables whose statistics are refreshed after the file commits (ANALYZE)
    analyzed: list[str] = field(default_factory=list)
    seconds: dict[str, float] = field(default_factory=dict)
    # own indexes dropped in the file's transaction, built again after it commits
    rebuilds: list[tuple[UUID, ModelIdentity]] = field(default_factory=list)
    # own indexes whose ef_search is fitted after the commit (data/ef_fits.py): those the file
    # built, and those it grew by a fifth or more (its transaction holds the table meanwhile)
    unfitted: list[tuple[UUID, ModelIdentity]] = field(default_factory=list)
    # own indexes (with a watermark) the file wrote rows to, and after the commit their
    # tails: merged then (with `rebuild`), or waiting for the indexer's merge
    tailed: list[tuple[UUID, ModelIdentity]] = field(default_factory=list)
    tails: list[Tail] = field(default_factory=list)

    @property
    def counts(self) -> dict[str, int]:
        return {
            "accounts": self.lines["account"],
            "sessions": self.lines["session"],
            "activity": self.lines["activity"],
            "chunks": self.lines["chunk"],
        }


def _progress(name: str, size: int) -> tqdm[Any]:
    """Bytes read, rows and rows/s, on a terminal only (quiet in CI and tests)."""
    return tqdm(total=size, desc=name, unit="B", unit_scale=True, disable=None)


def numbered_lines(
    handle: IO[bytes], errors: ErrorLog, bar: tqdm[Any] | None = None
) -> Iterator[tuple[int, bytes]]:
    """The file's non-blank lines with their numbers, read in bounded pieces."""
    number = 0
    while raw := handle.readline(MAX_LINE_BYTES + 1):
        number += 1
        if bar is not None:
            bar.update(len(raw))
        if len(raw) > MAX_LINE_BYTES and not raw.endswith(b"\n"):
            errors.add(number, f"line longer than {MAX_LINE_BYTES // 1024**2} MiB")
            while (rest := handle.readline(MAX_LINE_BYTES)) and not rest.endswith(b"\n"):
                pass
            continue
        if number == 1:
            raw = raw.removeprefix(b"\xef\xbb\xbf")
        if raw.strip():
            yield number, raw


async def import_file(
    engine: AsyncEngine,
    path: Path,
    account_index_min_chunks: int | None = None,
    *,
    file_format: str = "jsonl",
    account_id: UUID | None = None,
    rebuild: bool = False,
) -> Imported:
    """Import one file in one transaction; ImportRefused (nothing written) names every bad
    line as `file:line: reason`. With account_id (`--account`), every line must be of that
    account. With account_index_min_chunks, accounts grown past it get their own HNSW index
    in the same transaction; with `rebuild`, an own index the file brings many rows to is
    dropped in it and built again after it (SIMILAR_SESSIONS_IMPORT_REBUILDS_OWN_INDEX)."""
    label = str(path)
    with path.open("rb") as handle, _progress(path.name, os.fstat(handle.fileno()).st_size) as bar:
        errors = ErrorLog(label)
        numbered = numbered_lines(handle, errors, bar)
        async with engine.begin() as conn:
            imported = await _import(
                conn,
                numbered,
                errors,
                account_index_min_chunks,
                file_format,
                account_id,
                bar,
                rebuild=rebuild,
            )
    await _analyze_after_commit(engine, imported)
    await _rebuild(engine, imported)
    await _fit_after_commit(engine, imported)
    if account_index_min_chunks is not None:
        await _tails_after_commit(engine, imported, account_index_min_chunks, merge=rebuild)
    log.info(
        "imported",
        path=label,
        **imported.counts,
        seconds=imported.seconds,
        analyzed=imported.analyzed,
        tails={f"{t.account_id} {t.identity}": t.rows for t in imported.tails},
    )
    return imported


async def import_lines(
    conn: AsyncConnection,
    label: str,
    lines: Iterable[str | bytes],
    account_index_min_chunks: int | None = None,
    *,
    file_format: str = "jsonl",
    account_id: UUID | None = None,
) -> Imported:
    """import_file over lines in memory, in the caller's transaction; the tables to analyze
    after its commit are named in `analyzed` (data/import_rows.analyze), not analyzed here."""
    errors = ErrorLog(label)
    numbered = (
        (n, line.encode() if isinstance(line, str) else line)
        for n, line in enumerate(lines, start=1)
        if line.strip()
    )
    return await _import(conn, numbered, errors, account_index_min_chunks, file_format, account_id)


async def _import(
    conn: AsyncConnection,
    numbered: Iterable[tuple[int, bytes]],
    errors: ErrorLog,
    account_index_min_chunks: int | None,
    file_format: str,
    account_id: UUID | None,
    bar: tqdm[Any] | None = None,
    rebuild: bool = False,
) -> Imported:
    """The file in the caller's transaction; with `rebuild`, an own index the file brings
    many rows to is dropped, for the caller to build again after the commit (_rebuild)."""
    run = _Run(errors, bar, account_id)
    await lift_statement_budget(conn)
    await staging.create_stage(conn)
    await staging.copy_into_stage(
        conn, run.rows(FORMATS[file_format](numbered, errors, account_id))
    )
    run.phase("read", "checking")
    errors.raise_if_any()
    await _check(conn, run)
    run.phase("check", "writing")
    await _write_accounts(conn, run.accounts, run.identities)
    new_models = [i for i in sorted(run.identities, key=str) if await register_model(conn, i)]
    plan = OwnIndexPlan()
    if account_index_min_chunks is not None and run.imported.lines["chunk"]:
        incoming = await staging.staged_new_comparable(conn)
        plan = await plan_own_indexes(conn, account_index_min_chunks, incoming, rebuild)
    await _write_rows(conn, run)
    run.phase("write", "building indexes")
    for identity in new_models:
        await build_model_index(conn, identity)
        run.imported.indexes.append(str(identity))
    if account_index_min_chunks is not None and run.imported.lines["chunk"]:
        touched = await staging.staged_chunk_accounts(conn)
        built = await ensure_large_account_indexes(
            conn, account_index_min_chunks, touched, plan.deferred, fit=False
        )
        run.imported.indexes += [f"{b.account_id} {b.identity}" for b in built]
        run.imported.unfitted += [(b.account_id, b.identity) for b in built]
    run.imported.rebuilds = list(plan.rebuilt)
    run.imported.unfitted += plan.grown
    run.imported.tailed = list(plan.tails)
    run.phase("index", "done")
    return run.imported


async def _write_rows(conn: AsyncConnection, run: _Run) -> None:
    """The staged sessions, activity and chunks written, each chunk that repeats a vector of
    its session marked as it is written (data/repeats.py), the tables to analyze named."""
    grown = await staging.sessions_with_chunks(conn) if run.imported.lines["chunk"] else {}
    await staging.stage_repeats(conn)
    for kind in KINDS:
        run.imported.changed[kind] = await import_rows.upsert_staged(conn, kind)
    run.imported.analyzed = await import_rows.stale_tables(conn, run.imported.changed)
    # the sessions that had chunks: the marks of the rows written before (a representative
    # a new repeat of it extends, a chunk the file changed) are made again; a session new
    # with the file has its marks from stage_repeats alone
    for owner, sessions in grown.items():
        await mark_repeats(conn, owner, sessions)


async def _analyze_after_commit(engine: AsyncEngine, imported: Imported) -> None:
    """The statistics of the tables the file changed much, refreshed now that it has
    committed (before the fit, whose exact scans plan with them), in a transaction of their
    own: inside the file's, ANALYZE's lock would wait on an index build running concurrently,
    which waits on the file. A failure leaves them to autovacuum; the file stands."""
    if not imported.analyzed:
        return
    started = time.perf_counter()
    try:
        async with engine.begin() as conn:
            await import_rows.analyze(conn, imported.analyzed)
    except DBAPIError as exc:
        log.warning("analyze_failed", tables=imported.analyzed, error=str(exc))
        imported.analyzed = []
    imported.seconds["analyze"] = round(time.perf_counter() - started, 3)


async def _rebuild(engine: AsyncEngine, imported: Imported) -> None:
    """The own indexes the file's transaction dropped (it brought them many rows), built again
    now that it has committed, concurrently: the accounts take the exact path meanwhile."""
    started = time.perf_counter()
    for account_id, identity in imported.rebuilds:
        try:
            built = await rebuild_concurrently(engine, account_id, identity)
        except DBAPIError as exc:  # the file is committed: the account stays exact meanwhile
            log.warning("own_index_rebuild_failed", account_id=str(account_id), error=str(exc))
            continue
        if built is not None:
            imported.indexes.append(f"{account_id} {identity} (rebuilt)")
    if imported.rebuilds:
        imported.seconds["rebuild"] = round(time.perf_counter() - started, 3)


async def _fit_after_commit(engine: AsyncEngine, imported: Imported) -> None:
    """The ef_search of each own index the file built, or grew by a fifth or more, fitted on
    its rows now that the file has committed (data/ef_fits.py; 32 exact scans of the account,
    which would otherwise hold the file's lock on the table for everyone meanwhile). Until
    then, and if it fails, the index is searched at its earlier fit or the configured value."""
    started = time.perf_counter()
    for account_id, identity in imported.unfitted:
        try:
            await fit_again(engine, account_id, identity)
        except DBAPIError as exc:
            log.warning("ef_search_fit_failed", account_id=str(account_id), error=str(exc))
    if imported.unfitted:
        imported.seconds["fit"] = round(time.perf_counter() - started, 3)


async def _tails_after_commit(
    engine: AsyncEngine, imported: Imported, min_rows: int, merge: bool
) -> None:
    """The tails of the own indexes the file wrote rows to, as they stand after its commit;
    with `merge`, each that is due merged now, concurrently (the account's comparisons keep
    its index and tail meanwhile). A failed merge leaves the tail, looked up exactly."""
    if not imported.tailed:
        return
    found = await _tails_of(engine, imported.tailed, min_rows)
    due = [t for t in found if t.due] if merge else []
    started = time.perf_counter()
    for tail in due:
        try:
            await merge_concurrently(engine, tail.account_id, tail.identity)
        except DBAPIError as exc:  # the file is committed: its rows stay in the tail
            log.warning("own_index_merge_failed", account_id=str(tail.account_id), error=str(exc))
            continue
        imported.indexes.append(f"{tail.account_id} {tail.identity} (merged)")
    if due:
        imported.seconds["merge"] = round(time.perf_counter() - started, 3)
        found = await _tails_of(engine, imported.tailed, min_rows)
    imported.tails = found


async def _tails_of(
    engine: AsyncEngine, indexes: list[tuple[UUID, ModelIdentity]], min_rows: int
) -> list[Tail]:
    async with engine.connect() as conn:
        await lift_statement_budget(conn)
        found = await tails(conn, min_rows, sorted({account_id for account_id, _ in indexes}))
    return [t for t in found if (t.account_id, t.identity) in indexes]


class _Run:
    """One import's progress: what it counted, the accounts and models it met, and the time
    of each phase."""

    def __init__(self, errors: ErrorLog, bar: tqdm[Any] | None, confined: UUID | None) -> None:
        self.imported, self.started = Imported(), time.perf_counter()
        self.errors, self.bar, self.confined = errors, bar, confined
        self.accounts: list[tuple[int, AccountRecord]] = []
        self.identities: set[ModelIdentity] = set()

    def phase(self, name: str, then: str) -> None:
        now = time.perf_counter()
        self.imported.seconds[name] = round(now - self.started, 3)
        self.started = now
        if self.bar is not None:
            self.bar.set_postfix_str(f"{sum(self.imported.lines.values()):,} rows; {then}")

    async def rows(
        self, records: Iterable[tuple[int, Record]]
    ) -> AsyncIterator[tuple[object, ...]]:
        for count, (number, record) in enumerate(records, start=1):
            self.imported.lines[record.type] += 1
            if self.bar is not None and count % 4096 == 0:
                rate = count / (time.perf_counter() - self.started)
                self.bar.set_postfix_str(f"{count:,} rows, {rate:,.0f} rows/s", refresh=False)
            if self.confined is not None and (problem := outside_account(record, self.confined)):
                self.errors.add(number, problem)
            elif isinstance(record, AccountRecord):
                self.accounts.append((number, record))
            elif not self.errors.total:  # after a bad line, read on for errors, stage nothing
                if isinstance(record, ChunkRecord) and record.embedding is not None:
                    self.identities.add(record.identity)
                yield stage_row(number, record)


async def _check(conn: AsyncConnection, run: _Run) -> None:
    """The checks only the database can make: accounts against their stored keys, ids the
    file gives to another account or to two records, and (with --account) lines pointing at
    another account's session."""
    for number, reason in await account_problems(conn, run.accounts):
        run.errors.add(number, reason)
    await staging.resolve_owners(conn)
    ids = [a.id for _, a in run.accounts]
    total, found = await staging.conflicts(conn, ids, MAX_REPORTED_ERRORS, run.confined)
    for conflict in found:
        run.errors.add(conflict.line, conflict_reason(conflict, run.confined))
    run.errors.total += total - len(found)
    run.errors.raise_if_any()


async def _write_accounts(
    conn: AsyncConnection,
    accounts: list[tuple[int, AccountRecord]],
    identities: set[ModelIdentity],
) -> None:
    for _, a in accounts:
        await import_rows.upsert_rows(conn, t.accounts, [{"account_id": a.id, "name": a.name}])
        await import_rows.replace_features(conn, a.id, a.features)
        setting = None if a.embedding is None else a.embedding.row()
        await import_rows.replace_embedding_setting(conn, a.id, setting)
        await import_rows.add_api_keys(conn, a.id, [(k.key, k.scopes) for k in a.api_keys])
        if a.embedding is not None:
            identities.add(a.embedding.identity)
