"""Benchmark section of where the exact scan stops paying: the exact path against an own
index, SQL alone, on accounts of growing size."""

from __future__ import annotations

import uuid

import sqlalchemy as sa
from sqlalchemy.ext.asyncio import AsyncEngine

from bench.common.timing import clocked, p50
from bench.latency.corpus import IDENTITY, Account
from bench.latency.measure import probes_of, served
from bench.latency.report import Report
from data.account_indexes import ensure_account_index, valid_account_index
from resolvers.rules.lookup_path import LookupPath

SWEEP_CHUNKS = [300, 600, 1000, 1500, 2500, 5000, 10_000]  # chunks: the accounts nearest these


async def crossover(
    report: Report,
    engine: AsyncEngine,
    by_size: list[Account],
    sessions: dict[str, list[uuid.UUID]],
) -> None:
    """Exact scan against an own index, SQL alone, on accounts of growing size; an own
    index is built for the sweep where the product has none, and dropped after it."""
    report.say("## Where the exact scan stops paying: SQL p50 by account size")
    report.say()
    report.say("| chunks | exact path | own index | exact / index |")
    report.say("|---|---|---|---|")
    picks = sorted({_nearest(by_size, chunks).id for chunks in SWEEP_CHUNKS})
    for account in sorted((a for a in by_size if a.id in picks), key=lambda a: a.size):
        temporary = await _own_index(engine, account.id)
        probes = [
            await probes_of(engine, account.id, sid)
            for sid in report.sample(sessions[str(account.id)], 8)
        ]
        probes = [p for p in probes if p.chunks]
        exact_ms: list[float] = []
        index_ms: list[float] = []
        for _ in range(2):
            for p in probes:
                exact_ms.append(
                    (await clocked(served(engine, p, LookupPath.EXACT, report.tuning)))[0]
                )
                index_ms.append(
                    (await clocked(served(engine, p, LookupPath.ACCOUNT_INDEX, report.tuning)))[0]
                )
        if temporary is not None:
            await _drop_index(engine, temporary)
        report.say(
            f"| {account.size} | {p50(exact_ms):.1f} | {p50(index_ms):.1f} "
            f"| {p50(exact_ms) / p50(index_ms):.2f} |"
        )
    report.say()


def _nearest(accounts: list[Account], chunks: int) -> Account:
    return min(accounts, key=lambda a: abs(a.size - chunks))


async def _own_index(engine: AsyncEngine, account: uuid.UUID) -> str | None:
    """The name of the own index built for the sweep, or None where the account has one."""
    async with engine.begin() as conn:
        if await valid_account_index(conn, account, IDENTITY) is not None:
            return None
        built = await ensure_account_index(conn, account, IDENTITY)
        return None if built is None else built.index_name


async def _drop_index(engine: AsyncEngine, name: str) -> None:
    async with engine.begin() as conn:
        await conn.execute(sa.text(f"DROP INDEX {name}"))
        await conn.execute(
            sa.text("DELETE FROM account_model_indexes WHERE index_name = :n"), {"n": name}
        )
