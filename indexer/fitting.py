"""Fits the lexical embedder to an account: on first use, and again once the account's
sessions grew by the configured share since the last fit. A new fit is a new model
identity: the account's setting names it and its chunks are embedded again."""

from __future__ import annotations

import asyncio
import os
import sys
from collections.abc import Awaitable, Callable
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from uuid import UUID

import structlog
from sqlalchemy.ext.asyncio import AsyncEngine

from data import fits, next_fits
from data import indexing as sql
from data.engine import lift_statement_budget
from indexer import lexical
from indexer.embedders import Embedder, Registry
from indexer.lexical import Fit, FitBuilder
from indexer.templates import TemplateCounter

log = structlog.get_logger(__name__)


def due(fitted_sessions: int, sessions: int, growth_percent: int) -> bool:
    """Whether an account fitted on `fitted_sessions` sessions needs a new fit now."""
    return sessions * 100 >= fitted_sessions * (100 + growth_percent) and sessions > fitted_sessions


# A staged fit costs the passes while it is staged (every passage of the account embedded
# again beside the stream, a running session's under both fits; indexer/staged.py) and the
# minutes after its swap (its own index built again). So a new fit also waits until the one
# swapped in has been served this many times as long as it was staged, as a merge rests
# (data/own_index_tails.MERGE_REST): an account is staged at most 1 / (1 + REFIT_REST) of the
# time, however fast a stream grows it. Under 200 spans/s an account grew by the rule's
# quarter within the minimum interval, and was staged about half the time.
REFIT_REST = 3.0


def rest_left(stored: fits.StoredFit, now: datetime) -> timedelta:
    """How much longer the account's fit must be served before a new one is due: REFIT_REST
    times as long as it was staged, from its swap; none for a fit installed at once."""
    if stored.swapped_at is None:
        return timedelta(0)
    staged = max(stored.swapped_at - stored.fitted_at, timedelta(0))
    return max(stored.swapped_at + REFIT_REST * staged - now, timedelta(0))


def refit_due(
    stored: fits.StoredFit, sessions: int, rule: tuple[int, int], now: datetime | None = None
) -> bool:
    """Whether the account grew by the rule's share since its fit, its fit is at least the
    rule's interval old, and has rested (rest_left), at `now` (the clock's, unless given): a
    live account that grows fast is not fitted again on every pass, nor staged most of the
    time."""
    growth_percent, min_interval_s = rule
    now = datetime.now(UTC) if now is None else now
    old_enough = now - stored.fitted_at >= timedelta(seconds=min_interval_s)
    rested = rest_left(stored, now) == timedelta(0)
    return old_enough and rested and due(stored.sessions, sessions, growth_percent)


class Refits:
    """New lexical fits built beside the passes (`index --watch`), each by a process of its
    own (`fit_apart`): a full pass that finds an account's new fit due starts one and goes on
    with the account's current fit; a later full pass installs it once built. A fit reads
    every passage twice in Python (41 s for 25,000 passages in a 900 s stream): built within
    the pass, it held every pass of the process, and so every running session's passages,
    for as long."""

    def __init__(self) -> None:
        self.tasks: dict[UUID, asyncio.Task[Fit]] = {}

    def built(self, account_id: UUID) -> Fit | None:
        """The account's fit built beside the passes, taken; None while none is built (one
        that failed is logged, and the next full pass starts another)."""
        task = self.tasks.get(account_id)
        if task is None or not task.done():
            return None
        del self.tasks[account_id]
        if task.cancelled():
            return None
        if (failed := task.exception()) is not None:
            log.warning("lexical_fit_failed", account_id=str(account_id), error=repr(failed))
            return None
        return task.result()

    def forget(self, account_id: UUID) -> None:
        """No new fit of the account is due (another indexer installed one): the one being
        built, or built and not installed, is let go, so a stale fit is never installed."""
        if (task := self.tasks.pop(account_id, None)) is not None:
            task.cancel()

    def start(self, account_id: UUID, build: Callable[[], Awaitable[Fit]]) -> None:
        """A fit of the account built beside the passes, unless one is being built."""
        if account_id not in self.tasks:
            self.tasks[account_id] = asyncio.ensure_future(build())
            log.info("lexical_fit_begun", account_id=str(account_id))

    async def stopped(self) -> None:
        """The fits being built cancelled (nothing of them was written)."""
        for task in self.tasks.values():
            task.cancel()
        await asyncio.gather(*self.tasks.values(), return_exceptions=True)
        self.tasks.clear()


async def ensure_fit(
    engine: AsyncEngine,
    registry: Registry,
    work: sql.AccountWork,
    refit: tuple[int, int],
    repeat: sql.RepeatRule,
    template_min_sessions: int,
    growth_checked: bool = True,
    beside: Refits | None = None,
) -> tuple[sql.AccountWork, Embedder]:
    """The account's work under its current fit, fitting first when it has none or one is
    due (`refit`: the growth in percent and the least seconds between fits). Without
    `growth_checked` (a pass the live receiver woke), a fit the account's setting names and
    this process keeps is used as it is: neither its weights nor the account's sessions are
    read again (the next full pass sees whether the account grew enough for a new fit). With
    `beside`, a new fit of an account that has one is built beside the passes, and the
    current one used until it is built; then staged, and still used until the passages are
    embedded under the staged fit (indexer/staged.py), when the staged one is swapped in."""
    if not growth_checked and (kept := await _kept_fit(engine, registry, work)) is not None:
        return work, kept
    async with engine.connect() as conn:
        stored = await fits.load_fit(conn, work.account_id)
        sessions = await fits.sessions_with_clear_chunks(conn, work.account_id)
    if stored is not None and (stored.staged or not refit_due(stored, sessions, refit)):
        if beside is not None:  # none due, or one staged: none built beside
            beside.forget(work.account_id)
        return await _stored(engine, registry, work, stored, repeat)
    account = work.account_id
    fit = None if stored is None or beside is None else beside.built(account)
    if fit is None and stored is not None and beside is not None:
        beside.start(account, lambda: fit_apart(engine, account, template_min_sessions, repeat))
        return await _stored(engine, registry, work, stored, repeat)
    if fit is not None and stored is not None:
        await _staged(engine, registry, work, fit)
        return await _stored(engine, registry, work, stored, repeat)
    if fit is None:  # the account's first fit, or no fits beside the passes: built here
        fit = await built_fit(engine, account, template_min_sessions, repeat)
    return await _installed(engine, registry, work, fit, stored, repeat)


async def _staged(engine: AsyncEngine, registry: Registry, work: sql.AccountWork, fit: Fit) -> None:
    """The fit built beside the passes staged: the account's passages wait to be embedded
    under it while the served fit's vectors answer (indexer/staged.py swaps it in)."""
    async with engine.begin() as conn:
        await lift_statement_budget(conn)  # every passage of the account marked to wait
        waiting = await next_fits.stage(
            conn,
            work.account_id,
            fit.identity,
            fit.sessions,
            fit.to_bytes(),
            work.summaries_only,
        )
    registry.fitted(fit)  # kept for the passes that embed under it
    _logged("lexical_fit_staged", work.account_id, fit, waiting)


async def _stored(
    engine: AsyncEngine,
    registry: Registry,
    work: sql.AccountWork,
    stored: fits.StoredFit,
    repeat: sql.RepeatRule,
) -> tuple[sql.AccountWork, Embedder]:
    """The account's work under its stored fit, the account's setting made to name it."""
    fit = Fit.from_bytes(stored.sessions, stored.weights)
    if fit.identity != work.identity:  # the setting was re-imported, or names an old fit
        async with engine.begin() as conn:
            await fits.use_model(conn, work.account_id, fit.identity, family(), retry_skipped=False)
            await sql.skip_repeated(conn, work.account_id, repeat, fit.identity)
    return replace(work, identity=fit.identity), registry.fitted(fit)


async def _installed(
    engine: AsyncEngine,
    registry: Registry,
    work: sql.AccountWork,
    fit: Fit,
    stored: fits.StoredFit | None,
    repeat: sql.RepeatRule,
) -> tuple[sql.AccountWork, Embedder]:
    """The new fit saved and named by the account's setting, its chunks waiting for it."""
    async with engine.begin() as conn:
        await lift_statement_budget(conn)  # every passage of the account put back to wait
        await fits.save_fit(conn, work.account_id, fit.identity, fit.sessions, fit.to_bytes())
        waiting = await fits.use_model(
            conn, work.account_id, fit.identity, family(), retry_skipped=True
        )
        await sql.skip_repeated(conn, work.account_id, repeat, fit.identity)
        await next_fits.clear(conn, work.account_id)  # a fit staged before is replaced
        if stored is not None and stored.identity != str(fit.identity):
            await fits.drop_unused_model(conn, stored.identity)
    _logged("lexical_fit", work.account_id, fit, waiting)
    return replace(work, identity=fit.identity), registry.fitted(fit)


def _logged(event: str, account_id: UUID, fit: Fit, waiting: int) -> None:
    log.info(
        event,
        account_id=str(account_id),
        identity=str(fit.identity),
        sessions=fit.sessions,
        features=len(fit.keys),
        template_shingles=len(fit.common),
        chunks_to_embed=waiting,
    )


async def built_fit(
    engine: AsyncEngine, account_id: UUID, template_min_sessions: int, repeat: sql.RepeatRule
) -> Fit:
    """A fit of the account's clear passages, streamed twice: their templates, then the rest."""
    counter = TemplateCounter()
    async with engine.connect() as conn:
        async for texts in fits.clear_passages(conn, account_id):
            counter.add_session(texts)
        builder = FitBuilder(counter.common(template_min_sessions, repeat.min_share_percent))
        async for texts in fits.clear_passages(conn, account_id):
            builder.add_session(texts)
    return builder.build()


# What the fit's process (indexer/fit_apart.py) reads its database from, and writes the fit's
# sessions in before its weights.
FIT_URL = "SIMILAR_SESSIONS_FIT_URL"
SESSIONS_BYTES = 8


class FitFailed(Exception):
    """The process building a fit apart ended without one."""


async def fit_apart(
    engine: AsyncEngine, account_id: UUID, template_min_sessions: int, repeat: sql.RepeatRule
) -> Fit:
    """The account's fit built by a process of its own (indexer/fit_apart.py, which says
    why), on the engine's database; the process is killed if this is cancelled."""
    command = [str(account_id), str(template_min_sessions), str(repeat.min_share_percent)]
    url = engine.url.render_as_string(hide_password=False)
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "indexer.fit_apart",
        *command,
        env={**os.environ, FIT_URL: url},
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    try:
        out, err = await proc.communicate()
    except asyncio.CancelledError:
        proc.kill()
        await proc.wait()
        raise
    if proc.returncode != 0 or len(out) < SESSIONS_BYTES:
        told = err.decode(errors="replace").strip().splitlines()[-1:] or ["no output"]
        raise FitFailed(f"exit {proc.returncode}: {told[0]}")
    sessions = int.from_bytes(out[:SESSIONS_BYTES], "little")
    return Fit.from_bytes(sessions, out[SESSIONS_BYTES:])


async def _kept_fit(
    engine: AsyncEngine, registry: Registry, work: sql.AccountWork
) -> Embedder | None:
    """The embedder of the fit the account's setting names, if it is its fit and this
    process keeps it (the fit's weights not read)."""
    async with engine.connect() as conn:
        identity = await fits.fit_identity(conn, work.account_id)
    return registry.kept(work.identity) if identity == str(work.identity) else None


def family() -> str:
    """The prefix of every lexical identity (the fits' model identities)."""
    return f"{lexical.UNFITTED.provider}:{lexical.FAMILY}"
