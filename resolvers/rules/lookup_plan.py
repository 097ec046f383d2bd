"""The lookup plan: how one caller's lookups on one account go, decided by one pure rule from
the deployment's settings and two facts about the account (the ef_search fitted on its own
indexes, and whether its comparisons are routed exact). Every caller takes its plan here:
similar sessions, failure modes, the timeline, search's dense leg, and the nearest passages
offered when nothing passed.

In one sentence: a lookup is exact when it is a check, when its caller compares exactly
(failure modes), when the account is routed exact, or when the account's comparable chunks
of the model are at most `exact_scan_max_chunks`; else it scans the account's own index when
one is ready (the rows written since it was built scanned exactly beside it), is exact while
an own index is registered but not ready, and else scans the model's shared index; a scan
reads `overfetch` candidates at `ef_search`, is asked again once at `widen_ef_search` when it
came back short, and is checked by an exact pass within `check_budget_ms` when it cannot
vouch for its answer.

Which way a model's lookups go by size (`path`) is decided inside the statement, which counts
the model's comparable chunks as it runs (data/comparison_sql.py's `PATH_CHOICE`, kept equal
to `choose_path` by a test): the plan gives it every other input."""

from __future__ import annotations

from dataclasses import dataclass, replace
from enum import StrEnum

from resolvers.rules import ranking
from resolvers.rules.lookup_path import choose_path
from resolvers.tuning import Tuning
from values.lookups import ComparisonSettings, Limits, LookupPath

# An account routed to the exact path (resolvers/comparison/check_costs.py) is looked up as if
# the exact scan's size were this: every account the routing can choose is within it (the
# plan of an exact scan by size, measured faster than forcing the path).
ROUTED_EXACT_MAX_CHUNKS = 1_000_000_000


class Caller(StrEnum):
    """Who looks up, which decides what of the plan applies."""

    COMPARISON = "comparison"  # similarSessions, and the pages of a failure mode's members
    FAILURE_MODES = "failure_modes"  # the window pass: every session compared exactly
    TIMELINE = "timeline"  # counts of related sessions per bucket
    SEARCH = "search"  # a search text's dense leg
    NEAREST = "nearest"  # the nearest passages, with no floor, offered when nothing passed


@dataclass(frozen=True, slots=True)
class Account:
    """What the plan needs to know of the account: the ef_search fitted on its own indexes of
    the asked models (data/ef_fits.py; None: none fitted), and whether its last comparisons
    routed it exact (CheckCosts.routes_exact)."""

    fitted_ef_search: int | None = None
    routed_exact: bool = False


@dataclass(frozen=True, slots=True)
class LookupPlan:
    """How a caller's lookups go (see the module's sentence)."""

    caller: Caller
    exact: bool  # every lookup exact, whatever the account's size
    routed: bool  # the account is routed exact: every size is within the exact scan's
    exact_scan_max_chunks: int  # the size within which a model's lookups are exact
    ef_search: int
    widen_ef_search: int | None  # a short scan's second try; None: not asked again
    overfetch: int
    check_budget_ms: int  # the exact check's budget; 0: unsure lookups are not checked
    timeout_ms: int  # the caller's statements' time budget

    @property
    def settings(self) -> ComparisonSettings:
        """What the caller's connection runs under."""
        return ComparisonSettings(self.timeout_ms, self.ef_search)

    def limits(
        self,
        per_probe: int = ranking.SIMILAR_NEIGHBOURS_PER_PROBE,
        floor: float = ranking.MIN_SIMILAR_SIMILARITY,
        floors: tuple[tuple[str, float], ...] = (),
    ) -> Limits:
        """The bounds the statement's lookups take: the plan's over-fetch and exact size, the
        caller's neighbours per probe and floors."""
        return Limits(
            per_probe=per_probe,
            floor=floor,
            overfetch=self.overfetch,
            exact_scan_max_chunks=self.exact_scan_max_chunks,
            probes=ranking.SIMILAR_PROBE_CHUNKS,
            floors=floors,
        )

    def checked(self) -> LookupPlan:
        """The plan of the exact check of this plan's unsure lookups."""
        return replace(self, exact=True, widen_ef_search=None, check_budget_ms=0)

    def path(self, comparable: int, own_index: bool, registered: bool = False) -> LookupPath:
        """Which way a model's lookups go on an account of `comparable` chunks of it, with an
        own index ready (`own_index`) or only registered: the statement's choice."""
        if self.exact:
            return LookupPath.EXACT
        return choose_path(own_index, comparable, self.exact_scan_max_chunks, registered)


@dataclass(frozen=True, slots=True)
class Applies:
    """What of the plan a caller takes: the account's fitted ef_search (when below the
    configured one), its routing, the wider retry, the exact check."""

    fitted: bool
    routed: bool
    widened: bool
    checked: bool


# The wider retry and the check stay on beside a fitted ef_search, so a lookup the narrower
# scan cannot vouch for is still asked again, and checked. The nearest passages run on the
# connection their caller configured, at its ef_search.
APPLIES = {
    Caller.COMPARISON: Applies(fitted=True, routed=True, widened=True, checked=True),
    Caller.FAILURE_MODES: Applies(fitted=False, routed=False, widened=False, checked=False),
    Caller.TIMELINE: Applies(fitted=True, routed=False, widened=False, checked=False),
    Caller.SEARCH: Applies(fitted=False, routed=False, widened=False, checked=True),
    Caller.NEAREST: Applies(fitted=False, routed=False, widened=False, checked=False),
}


def plan(caller: Caller, tuning: Tuning, account: Account = Account()) -> LookupPlan:
    """The caller's plan on the account (APPLIES says what of it the caller takes); failure
    modes are exact, within their own budget, and the timeline reads as many candidates as
    it counts."""
    applies = APPLIES[caller]
    fitted = account.fitted_ef_search if applies.fitted and tuning.ef_search_fitted else None
    routed = applies.routed and account.routed_exact
    wider = applies.widened and tuning.ef_search_retry > tuning.ef_search
    timeline = caller is Caller.TIMELINE
    failure_modes = caller is Caller.FAILURE_MODES
    return LookupPlan(
        caller=caller,
        exact=failure_modes,
        routed=routed,
        exact_scan_max_chunks=ROUTED_EXACT_MAX_CHUNKS if routed else tuning.exact_scan_max_chunks,
        ef_search=min(fitted, tuning.ef_search) if fitted is not None else tuning.ef_search,
        widen_ef_search=tuning.ef_search_retry if wider else None,
        overfetch=ranking.TIMELINE_NEIGHBOURS_PER_PROBE if timeline else tuning.overfetch,
        check_budget_ms=tuning.verify_budget_ms if applies.checked else 0,
        timeout_ms=(
            tuning.failure_modes_timeout_ms if failure_modes else tuning.comparison_timeout_ms
        ),
    )
