"""Where a comparison's time goes, read from the spans the product emits for it
(resolvers/telemetry.py), not from the data layer: within `traced()` the process's tracer
provider keeps every finished span in memory (opentelemetry-sdk's InMemorySpanExporter, each
span exported as it ends), and `tallied` runs a comparison under a span of its own, so the
phase spans the comparison opens under it (`similar_sessions.lookups`, `.widened`, `.check`,
`.nearest`, `.ranking`, `.details`) give its time by phase, and what its own span took beyond
them is `other` (the model catalog, the plan, the connection, the session's settings, a
second lookup for a model that appeared meanwhile, learning the route, the log line: the
data-layer wrapper this replaced counted the second lookup and the settings as `lookups`).

Which extra work it did is read from the same spans: a `widened` span is the wider retry, a
`check` span whose plan had a budget is an exact check tried, and its `exact_check` events
say which started; why each first lookup could not vouch is the lookups span's
`similar_sessions.lookups.approximate` and `.doubts.<reason>` counts (the product's
`why_not_vouched`, resolvers/comparison/verify.py `say_doubts`)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Awaitable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from opentelemetry import trace
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from resolvers.comparison.check_costs import EXACT_CHECK
from resolvers.comparison.verify import APPROXIMATE, DOUBTS
from resolvers.rules.lookup_path import Doubt, why_not_vouched
from values.lookups import Limits, ScanWindow

# The phases a comparison's time is split into (ms), in the order the tables print them: each
# but `other` is the product's span `similar_sessions.<phase>`.
PHASES = ("lookups", "widened", "check", "nearest", "ranking", "details", "other")
SPAN = "similar_sessions."
COMPARISON = "bench.comparison"  # the span `tallied` runs a comparison under
BUDGET = "similar_sessions.plan.check_budget_ms"

_kept = InMemorySpanExporter()
_provider: TracerProvider | None = None


@dataclass
class Tally:
    """One comparison (or batch), from its spans: ms by phase, its whole ms, the extra work
    it did, and why its first lookups could not vouch (the approximate lookups by reason,
    `vouched` for those that could)."""

    ms: dict[str, float] = field(default_factory=dict)
    total_ms: float = 0.0
    widened: bool = False
    checked: bool = False
    checks_started: int = 0  # exact passes started
    doubts: Counter[str] = field(default_factory=Counter)

    @classmethod
    def of(cls, spans: Sequence[ReadableSpan]) -> Tally:
        """The tally of one comparison's spans: its own (`COMPARISON`) and the phases'."""
        [whole] = [s for s in spans if s.name == COMPARISON]
        phases = [s for s in spans if s.name.startswith(SPAN)]
        tally = cls(total_ms=_ms(whole))
        for p in PHASES[:-1]:
            tally.ms[p] = sum(_ms(s) for s in phases if s.name == SPAN + p)
        tally.ms["other"] = max(0.0, tally.total_ms - sum(tally.ms.values()))
        tally.widened = any(s.name == SPAN + "widened" for s in phases)
        checks = [s for s in phases if s.name == SPAN + "check" and _attr(s, BUDGET, 0) > 0]
        tally.checked = bool(checks)
        events = [e for s in checks for e in s.events if e.name == EXACT_CHECK]
        tally.checks_started = sum(1 for e in events if (e.attributes or {}).get("started"))
        tally.doubts = _doubts([s for s in phases if s.name == SPAN + "lookups"])
        return tally


def _ms(span: ReadableSpan) -> float:
    if span.start_time is None or span.end_time is None:
        return 0.0
    return (span.end_time - span.start_time) / 1e6


def _attr(span: ReadableSpan, name: str, default: Any) -> Any:
    return (span.attributes or {}).get(name, default)


def _doubts(lookups: list[ReadableSpan]) -> Counter[str]:
    """The first lookups' reasons (the first lookups span: the first statement); none when
    nothing was judged (nothing to look up, or the statement ran past its budget)."""
    if not lookups:
        return Counter()
    first = min(lookups, key=lambda s: s.start_time or 0)
    out = Counter({str(d): int(_attr(first, f"{DOUBTS}.{d.name.lower()}", 0)) for d in Doubt})
    out["vouched"] = int(_attr(first, APPROXIMATE, 0)) - sum(out.values())
    return +out  # only the reasons that occurred


def doubt(window: ScanWindow | None, limits: Limits) -> str:
    """Why `vouches_for` would not vouch for this window (its first failing condition, the
    product's rule: resolvers/rules/lookup_path.py), or `vouched`."""
    return why_not_vouched(window, limits.window, limits.per_probe) or "vouched"


def _install() -> TracerProvider:
    """The process's tracer provider, exporting every finished span to memory as it ends:
    the SDK provider already set gets the exporter beside its own processors, else one is
    set (the product's tracers are proxies: they follow it)."""
    global _provider
    if _provider is not None:
        return _provider
    current = trace.get_tracer_provider()
    if isinstance(current, TracerProvider):
        provider = current
    else:
        provider = TracerProvider()
        trace.set_tracer_provider(provider)
        if trace.get_tracer_provider() is not provider:
            raise RuntimeError(f"a tracer provider is already set: {current!r}")
    provider.add_span_processor(SimpleSpanProcessor(_kept))
    _provider = provider
    return provider


@contextmanager
def traced() -> Iterator[None]:
    """Within the block, the comparisons `tallied` runs leave their spans to be read; the
    spans nothing read are dropped at its end."""
    _install()
    _kept.clear()
    try:
        yield
    finally:
        _kept.clear()


async def tallied(work: Awaitable[Any]) -> tuple[Tally, Any]:
    """The awaited work (a comparison) under a span of its own, with the tally its spans
    give (inside `traced()`; one at a time: the spans kept are read, then dropped)."""
    tracer = _install().get_tracer(__name__)
    try:
        with tracer.start_as_current_span(COMPARISON) as span:
            out = await work
        spans = _kept.get_finished_spans()
    finally:
        _kept.clear()
    trace_id = span.get_span_context().trace_id
    return Tally.of(
        [s for s in spans if s.context is not None and s.context.trace_id == trace_id]
    ), out


def mean_ms(tallies: list[Tally], phase: str) -> float:
    """The phase's mean ms over the tallies (nan without any)."""
    if not tallies:
        return float("nan")
    return sum(t.ms.get(phase, 0.0) for t in tallies) / len(tallies)


def checks_run(tallies: list[Tally]) -> str:
    """`k of n`: the exact passes the n tallies' comparisons started."""
    return f"{sum(t.checks_started for t in tallies)} of {len(tallies)}"


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

    def counted(self) -> str:
        """`vouched / n (reason k, ...)`: the first lookups that could and could not vouch."""
        return f"{self.vouched} / {self.said()}"
