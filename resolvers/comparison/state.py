"""One frozen record per comparison, and the batch of them one DataLoader call compares: each
phase (phases.py) takes the batch and returns a new one, so what a comparison has found so
far is read in one place, never in dicts keyed by its place in the batch."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field, replace
from datetime import datetime
from uuid import UUID

from data.accounts import EmbeddingSetting
from data.lookups import Ask, Inventory, Lookup, ModelPath, Probe
from resolvers.arguments import SimilarArgs
from resolvers.rules import ranking
from resolvers.rules.lookup_plan import LookupPlan
from values.lookups import Hit, LookupPath


@dataclass(frozen=True, slots=True)
class Narrowing:
    """What a comparison asks beyond the API's arguments, which only the failure modes ask
    (resolvers/failure_modes.py): only the sessions that started before an instant, and
    whether, when nothing passes the floor, the nearest passages below it are looked up and
    offered (the failure modes read only what passed it)."""

    started_before: datetime | None = None
    offer_nearest: bool = True


NOT_NARROWED = Narrowing()  # what a similarSessions field or route asks: nothing more


@dataclass(frozen=True, slots=True)
class Comparison:
    """One asked session: its ask, arguments and narrowing, what the first statement found
    of it (None until then, and for a session the account does not have), whether a lookup
    stayed unverified, and its ranked neighbours and page."""

    ask: Ask
    args: SimilarArgs
    narrowing: Narrowing
    found: Inventory | None = None
    unverified: bool = False  # a lookup could not vouch, and its exact check did not run
    widened: int = 0  # probes asked again at the wider ef_search (their lookups came up short)
    checked: int = 0  # probes answered by the exact check (their lookups could not vouch)
    page: tuple[ranking.Neighbour, ...] = ()
    more: bool = False  # neighbours follow the page
    ranked: tuple[ranking.Neighbour, ...] = ()  # every neighbour, in order (the page's list)
    # With no hit: the passages nearest its probes, floor or no floor, and their sessions
    # ranked (offered, loose, as nothing was close enough).
    nearest_hits: tuple[Hit, ...] = ()
    nearest: tuple[ranking.Neighbour, ...] = ()

    @property
    def model(self) -> str | None:
        """The comparison model (None: the session has no embedded clear chunk)."""
        return None if self.found is None else self.found.model

    @property
    def probes(self) -> tuple[Probe, ...]:
        return () if self.found is None else self.found.probes

    def hits(self) -> Iterator[Hit]:
        for probe in self.probes:
            yield from probe.answer.hits

    @property
    def has_hits(self) -> bool:
        return any(probe.answer.hits for probe in self.probes)

    def lookups(self, numbers: frozenset[int]) -> int:
        """The lookups that answer these probes: probes with one vector share one."""
        return len({p.lookup for p in self.probes if p.number in numbers})

    def answered(self, numbers: frozenset[int], again: Inventory | None, exact: bool) -> Comparison:
        """This comparison with these probes answered as `again` (the same session looked
        up again, by the exact check when `exact`, else at the wider ef_search) answers
        them, and counted as checked or widened."""
        if self.found is None or again is None:
            return self
        answers = {p.number: p.answer for p in again.probes if p.number in numbers}
        probes = tuple(
            replace(p, answer=answers.get(p.number, Lookup())) if p.number in numbers else p
            for p in self.probes
        )
        found = replace(self.found, probes=probes)
        if exact:
            return replace(self, found=found, checked=self.checked + len(numbers))
        return replace(self, found=found, widened=self.widened + len(numbers))


@dataclass(frozen=True, slots=True)
class Batch:
    """The comparisons of one account asked together, and what their statements found of
    the account: its setting, the plan its lookups followed and each model's lookup path."""

    account_id: UUID
    comparisons: tuple[Comparison, ...]
    setting: EmbeddingSetting | None = None
    paths: dict[str, ModelPath] = field(default_factory=dict)
    timed_out: bool = False
    plan: LookupPlan | None = None

    def path(self, model: str | None) -> LookupPath | None:
        """The path the model's probes took; None when none was looked up."""
        known = self.paths.get(model or "")
        return None if known is None else known.path

    @property
    def found(self) -> Iterator[Comparison]:
        """The comparisons whose session the account has."""
        return (c for c in self.comparisons if c.found is not None)

    def with_comparisons(self, comparisons: Iterator[Comparison]) -> Batch:
        return replace(self, comparisons=tuple(comparisons))
