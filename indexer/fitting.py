"""Fits the lexical embedder to an account: on first use, and again once the account's
sessions grew by the configured share since the last fit. A new fit is a new model
identity: the account's setting names it and its chunks are embedded again."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta
from uuid import UUID

import structlog
from sqlalchemy.ext.asyncio import AsyncEngine

from data import fits
from data import indexing as sql
from indexer import lexical
from indexer.embedders import Embedder, Registry
from indexer.lexical import Fit, FitBuilder
from indexer.templates import TemplateCounter

log = structlog.get_logger(__name__)


def due(fitted_sessions: int, sessions: int, growth_percent: int) -> bool:
    """Whether an account fitted on `fitted_sessions` sessions needs a new fit now."""
    return sessions * 100 >= fitted_sessions * (100 + growth_percent) and sessions > fitted_sessions


def refit_due(stored: fits.StoredFit, sessions: int, rule: tuple[int, int]) -> bool:
    """Whether the account grew by the rule's share since its fit, and its fit is at least the
    rule's interval old: a live account that grows fast is not fitted again on every pass."""
    growth_percent, min_interval_s = rule
    old_enough = datetime.now(UTC) - stored.fitted_at >= timedelta(seconds=min_interval_s)
    return old_enough and due(stored.sessions, sessions, growth_percent)


async def ensure_fit(
    engine: AsyncEngine,
    registry: Registry,
    work: sql.AccountWork,
    refit: tuple[int, int],
    repeat: sql.RepeatRule,
    template_min_sessions: int,
    growth_checked: bool = True,
) -> tuple[sql.AccountWork, Embedder]:
    """The account's work under its current fit, fitting first when it has none or one is
    due (`refit`: the growth in percent and the least seconds between fits). Without
    `growth_checked` (a pass the live receiver woke), a fit the account's setting names and
    this process keeps is used as it is: neither its weights nor the account's sessions are
    read again (the next full pass sees whether the account grew enough for a new fit)."""
    if not growth_checked and (kept := await _kept_fit(engine, registry, work)) is not None:
        return work, kept
    async with engine.connect() as conn:
        stored = await fits.load_fit(conn, work.account_id)
        sessions = await fits.sessions_with_clear_chunks(conn, work.account_id)
    if stored is not None and not refit_due(stored, sessions, refit):
        fit = Fit.from_bytes(stored.sessions, stored.weights)
        if fit.identity != work.identity:  # the setting was re-imported, or names an old fit
            async with engine.begin() as conn:
                await fits.use_model(
                    conn, work.account_id, fit.identity, _family(), retry_skipped=False
                )
                await sql.skip_repeated(conn, work.account_id, repeat, fit.identity)
        return replace(work, identity=fit.identity), registry.fitted(fit)
    fit = await built_fit(engine, work.account_id, template_min_sessions, repeat)
    async with engine.begin() as conn:
        await fits.save_fit(conn, work.account_id, fit.identity, fit.sessions, fit.to_bytes())
        waiting = await fits.use_model(
            conn, work.account_id, fit.identity, _family(), retry_skipped=True
        )
        await sql.skip_repeated(conn, work.account_id, repeat, fit.identity)
        if stored is not None and stored.identity != str(fit.identity):
            await fits.drop_unused_model(conn, stored.identity)
    log.info(
        "lexical_fit",
        account_id=str(work.account_id),
        identity=str(fit.identity),
        sessions=fit.sessions,
        features=len(fit.keys),
        template_shingles=len(fit.common),
        chunks_to_embed=waiting,
    )
    return replace(work, identity=fit.identity), registry.fitted(fit)


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


async def _kept_fit(
    engine: AsyncEngine, registry: Registry, work: sql.AccountWork
) -> Embedder | None:
    """The embedder of the fit the account's setting names, if it is its fit and this
    process keeps it (the fit's weights not read)."""
    async with engine.connect() as conn:
        identity = await fits.fit_identity(conn, work.account_id)
    return registry.kept(work.identity) if identity == str(work.identity) else None


def _family() -> str:
    return f"{lexical.UNFITTED.provider}:{lexical.FAMILY}"
