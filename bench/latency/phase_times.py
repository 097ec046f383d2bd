"""Where a comparison's time goes, measured in the bench process without touching the
product: the data layer's calls a comparison makes are wrapped and timed, as the tests
monkeypatch them (the first statement's lookups, the wider retry, the exact check in its
savepoint, the second statement, the pure ranking), and the lines the comparison logs at
INFO are counted; each first lookup's window is judged as `vouches_for` judges it, so the
reasons a check ran can be counted too."""

from __future__ import annotations

import logging
import time
from collections import Counter
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from contextlib import asynccontextmanager, contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any

import structlog
from sqlalchemy.ext.asyncio import AsyncConnection

from data import comparison, comparison_details
from data.lookups import Limits, LookupAnswer, ScanWindow
from resolvers.comparison import phases
from resolvers.rules.lookup_path import (
    CROWDED_WINDOW_DISTANCE,
    HNSW_ROWS_PER_NODE,
    NEAR_TIE_DISTANCE,
)

# The phases a comparison's time is split into (ms), in the order the tables print them.
PHASES = ("lookups", "widened", "check", "ranking", "details", "other")
# The lines the comparison logs at INFO that say which extra work it did.
EVENTS = (
    "similar_sessions",
    "similar_sessions_widened",
    "similar_sessions_verified",
    "exact_check",
)


@dataclass
class Tally:
    """One comparison (or batch): ms by phase, its log lines, and why its first lookups
    could not vouch (a reason per lookup; `vouched` for those that could)."""

    ms: dict[str, float] = field(default_factory=dict)
    events: list[dict[str, Any]] = field(default_factory=list)
    doubts: Counter[str] = field(default_factory=Counter)
    widened: bool = False
    checking: bool = False
    first: bool = True
    total_ms: float = 0.0

    def count(self, event: str) -> int:
        return sum(1 for e in self.events if e["event"] == event)

    def field_sum(self, event: str, name: str) -> int:
        return sum(int(e.get(name, 0)) for e in self.events if e["event"] == event)


_current: ContextVar[Tally | None] = ContextVar("bench_phase_tally", default=None)


def doubt(window: ScanWindow | None, limits: Limits) -> str:
    """Why `vouches_for` would not vouch for this window (its first failing condition), or
    `vouched`; the conditions are the product's (resolvers/rules/lookup_path.py)."""
    overfetch, per_probe = limits.window, limits.per_probe
    if window is None or window.farthest is None or window.nearest is None or window.last is None:
        return "no window"
    if window.scanned < overfetch:
        return "scan ended early"
    if window.hits < per_probe:
        return "fewer hits than kept"
    if overfetch > per_probe and window.farthest - window.last < NEAR_TIE_DISTANCE:
        return "window ends at its last row"
    if overfetch > per_probe and window.farthest - window.nearest < CROWDED_WINDOW_DISTANCE:
        return "window crowded"
    if window.tied > HNSW_ROWS_PER_NODE:
        return "tied group"
    return "vouched"


def _judge(tally: Tally, answer: LookupAnswer, limits: Limits) -> None:
    for inventory in answer.inventories:
        known = None if inventory is None else answer.paths.get(inventory.model or "")
        path = None if known is None else known.path
        if inventory is None or path is None or not path.approximate:
            continue
        for probe in inventory.probes:
            if probe.lookup == probe.number:  # probes of one vector share one lookup
                tally.doubts[doubt(probe.answer.window, limits)] += 1


def _timed(tally: Tally, phase: str, started: float) -> None:
    tally.ms[phase] = tally.ms.get(phase, 0.0) + (time.perf_counter() - started) * 1000


def _look_up(original: Callable[..., Awaitable[LookupAnswer]]) -> Callable[..., Any]:
    async def look_up(
        conn: AsyncConnection,
        account_id: Any,
        asks: Any,
        models: Any,
        limits: Limits,
        *args: Any,
        **kw: Any,
    ) -> LookupAnswer:
        tally, started = _current.get(), time.perf_counter()
        answer = await original(conn, account_id, asks, models, limits, *args, **kw)
        if tally is not None and not tally.checking:  # the check's block is timed whole
            _timed(tally, "widened" if tally.widened else "lookups", started)
            if tally.first:
                tally.first = False
                _judge(tally, answer, limits)
        return answer

    return look_up


def _widen(original: Callable[..., Awaitable[None]]) -> Callable[..., Any]:
    async def widen_search(conn: AsyncConnection, ef_search: int) -> None:
        tally, started = _current.get(), time.perf_counter()
        await original(conn, ef_search)
        if tally is not None:
            tally.widened = True
            _timed(tally, "widened", started)

    return widen_search


def _budget(original: Callable[..., Any]) -> Callable[..., Any]:
    @asynccontextmanager
    async def own_budget(conn: AsyncConnection, budget_ms: int) -> AsyncIterator[None]:
        tally, started = _current.get(), time.perf_counter()
        if tally is not None:
            tally.checking = True
        try:
            async with original(conn, budget_ms):
                yield
        finally:
            if tally is not None:
                tally.checking = False
                _timed(tally, "check", started)

    return own_budget


def _plain(original: Callable[..., Any], phase: str, awaited: bool) -> Callable[..., Any]:
    async def timed_async(*args: Any, **kw: Any) -> Any:
        tally, started = _current.get(), time.perf_counter()
        out = await original(*args, **kw)
        if tally is not None:
            _timed(tally, phase, started)
        return out

    def timed(*args: Any, **kw: Any) -> Any:
        tally, started = _current.get(), time.perf_counter()
        out = original(*args, **kw)
        if tally is not None:
            _timed(tally, phase, started)
        return out

    return timed_async if awaited else timed


class _Captured(logging.Handler):
    """Keeps the comparison's INFO lines (structlog's event dicts) for the current tally."""

    def emit(self, record: logging.LogRecord) -> None:
        tally = _current.get()
        if tally is not None and isinstance(record.msg, dict) and record.msg["event"] in EVENTS:
            tally.events.append(dict(record.msg))


@contextmanager
def wrapped() -> Iterator[None]:
    """Within the block, the comparison's data-layer calls are timed into the current tally
    and its INFO lines kept (the log level is raised to INFO for those loggers only)."""
    saved = {
        (comparison, "look_up"): comparison.look_up,
        (comparison, "widen_search"): comparison.widen_search,
        (comparison, "own_budget"): comparison.own_budget,
        (comparison_details, "show"): comparison_details.show,
        (phases, "rank"): phases.rank,
    }
    comparison.look_up = _look_up(comparison.look_up)
    comparison.widen_search = _widen(comparison.widen_search)
    comparison.own_budget = _budget(comparison.own_budget)
    comparison_details.show = _plain(comparison_details.show, "details", True)
    phases.rank = _plain(phases.rank, "ranking", False)
    with _info_lines():
        try:
            yield
        finally:
            for (module, name), original in saved.items():
                setattr(module, name, original)


@contextmanager
def _info_lines() -> Iterator[None]:
    handler, config = _Captured(), structlog.get_config()
    loggers = [
        logging.getLogger(n)
        for n in (
            "resolvers.comparison.phases",
            "resolvers.comparison.verify",
            "resolvers.comparison.check_costs",
        )
    ]
    levels = [(lg, lg.level, lg.propagate) for lg in loggers]
    for lg in loggers:
        lg.addHandler(handler)
        lg.setLevel(logging.INFO)
        lg.propagate = False
    structlog.configure(wrapper_class=structlog.make_filtering_bound_logger(logging.INFO))
    try:
        yield
    finally:
        structlog.configure(wrapper_class=config["wrapper_class"])
        for lg, level, propagate in levels:
            lg.removeHandler(handler)
            lg.setLevel(level)
            lg.propagate = propagate


async def tallied(work: Awaitable[Any]) -> tuple[Tally, Any]:
    """The awaited work (a comparison) with its own tally (inside `wrapped()`)."""
    tally = Tally()
    token = _current.set(tally)
    started = time.perf_counter()
    try:
        out = await work
    finally:
        tally.total_ms = (time.perf_counter() - started) * 1000
        _current.reset(token)
    tally.ms["other"] = max(0.0, tally.total_ms - sum(tally.ms.values()))
    return tally, out


def mean_ms(tallies: list[Tally], phase: str) -> float:
    """The phase's mean ms over the tallies (nan without any)."""
    if not tallies:
        return float("nan")
    return sum(t.ms.get(phase, 0.0) for t in tallies) / len(tallies)


@dataclass(frozen=True, slots=True)
class Doubts:
    """Over some tallies: the first lookups that could vouch, and why the others could not."""

    vouched: int
    why: Counter[str]

    @classmethod
    def of(cls, tallies: list[Tally]) -> Doubts:
        counted: Counter[str] = Counter()
        for t in tallies:
            counted.update(t.doubts)
        vouched = counted.pop("vouched", 0)
        return cls(vouched, counted)

    @property
    def could_not(self) -> int:
        return sum(self.why.values())

    def said(self) -> str:
        """`n (reason k, reason k)`: the lookups that could not vouch, by reason."""
        reasons = ", ".join(f"{k} {v}" for k, v in self.why.most_common()) or "-"
        return f"{self.could_not} ({reasons})"
