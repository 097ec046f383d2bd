"""The lookup plan: how one caller's lookups on one account go, decided by one pure rule from
the deployment's settings and what the account's snapshot says (data/account_snapshot.py:
each model's comparable chunks and own index, the ef_search fitted on its own indexes) and
whether its comparisons are routed exact. Every caller takes its plan here: similar sessions,
failure modes (and their earlier sessions), the timeline, search's dense leg, and the
nearest passages offered when nothing passed. The statements take it as parameters.

In one sentence: a lookup is exact when it is a check, when its caller compares exactly
(failure modes), when the account is routed exact, or when the account's comparable chunks
of the model are at most `exact_scan_max_chunks`; else it scans the account's own index when
one is ready (the rows written since it was built scanned exactly beside it), is exact while
an own index is registered but not ready, and else scans the model's shared index; a scan
reads `overfetch` candidates at `ef_search`, is asked again once at `widen_ef_search` when it
came back short, and is checked by an exact pass within `check_budget_ms` when it cannot
vouch for its answer; exact lookups rank a pool read once (`pooled`) or each scan the
account (a check, and the failure modes, which look nothing up in the statement).

The statement keeps one thing of its own: an index path whose index is no longer what the
snapshot said (not ready now, or registered since) is answered on the exact path
(data/comparison_sql.py's `PATH_GUARD`)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from enum import StrEnum

from resolvers.rules import ranking
from resolvers.rules.lookup_path import choose_path
from resolvers.tuning import Tuning
from values.lookups import ComparisonSettings, Limits, LookupPath


class Caller(StrEnum):
    """Who looks up, which decides what of the plan applies."""

    COMPARISON = "comparison"  # similarSessions, and the pages of a failure mode's members
    FAILURE_MODES = "failure_modes"  # the window pass: every session compared exactly
    # the failure modes' sessions before the window: in one exact pass up to the plan's
    # exact_scan_max_chunks passages, else through the comparison's paths
    EARLIER = "earlier"
    TIMELINE = "timeline"  # counts of related sessions per bucket
    SEARCH = "search"  # a search text's dense leg
    NEAREST = "nearest"  # the nearest passages, with no floor, offered when nothing passed


@dataclass(frozen=True, slots=True)
class ModelFacts:
    """What the account's snapshot says of one model: its comparable chunks (counted up to
    the exact scan's size and one more, at least), and its own index, ready or only
    registered."""

    comparable: int
    own_index: bool = False
    registered: bool = False


@dataclass(frozen=True, slots=True)
class Account:
    """What the plan needs to know of the account: the ef_search fitted on its own indexes of
    the asked models (data/ef_fits.py; None: none fitted), whether its last comparisons
    routed it exact (CheckCosts.routes_exact), and its models (model identity -> facts)."""

    fitted_ef_search: int | None = None
    routed_exact: bool = False
    models: Mapping[str, ModelFacts] = field(default_factory=dict)
    # the ef_search of the connection a caller that runs on its caller's (APPLIES'
    # own_connection false) is looked up on; None: not known, the configured one
    caller_ef_search: int | None = None


@dataclass(frozen=True, slots=True)
class LookupPlan:
    """How a caller's lookups go (see the module's sentence)."""

    caller: Caller
    exact: bool  # every lookup on the exact path, whatever the account's size
    routed: bool  # the account is routed exact (and so `exact`)
    pooled: bool  # exact lookups rank a pool read once; else each scans the account
    exact_scan_max_chunks: int  # the size within which a model's lookups are exact
    ef_search: int
    widen_ef_search: int | None  # a short scan's second try; None: not asked again
    overfetch: int
    check_budget_ms: int  # the exact check's budget; 0: unsure lookups are not checked
    timeout_ms: int  # the caller's statements' time budget
    paths: Mapping[str, LookupPath] = field(default_factory=dict)  # per model of the account

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
        """The plan of the exact check of this plan's unsure lookups: each scans."""
        exact = dict.fromkeys(self.paths, LookupPath.EXACT)
        return replace(
            self, exact=True, pooled=False, widen_ef_search=None, check_budget_ms=0, paths=exact
        )

    def path(self, comparable: int, own_index: bool, registered: bool = False) -> LookupPath:
        """Which way a model's lookups go on an account of `comparable` chunks of it, with an
        own index ready (`own_index`) or only registered: the lookup rule."""
        if self.exact:
            return LookupPath.EXACT
        return choose_path(own_index, comparable, self.exact_scan_max_chunks, registered)

    def path_of(self, model: str) -> LookupPath:
        """The path the plan decided for the model (exact for one the account did not have)."""
        return self.paths.get(model, LookupPath.EXACT)


@dataclass(frozen=True, slots=True)
class Applies:
    """What of the plan a caller takes: the account's fitted ef_search (when below the
    configured one), its routing, the wider retry, the exact check; whether it compares
    exactly, whether its exact lookups rank a pool, its own exact size (None: the
    deployment's `exact_scan_max_chunks`), and whether it runs on a connection of its own
    settings (else on its caller's, at its ef_search)."""

    fitted: bool
    routed: bool
    widened: bool
    checked: bool
    exact: bool = False
    pooled: bool = True
    exact_up_to: int | None = None
    own_connection: bool = True


# The wider retry and the check stay on beside a fitted ef_search, so a lookup the narrower
# scan cannot vouch for is still asked again, and checked. The nearest passages run on their
# caller's connection, at its ef_search (setting another would cost every comparison that
# found nothing on a fitted account one more statement). The failure modes' window
# pass looks nothing up in the statement (it reads a pool itself); their earlier sessions go
# in one exact pass while those before the window hold at most 50,000 passages (a pass over
# 25k of them for 100 groups' representatives took well under a second here), above it
# through the comparison's paths, whose cost does not grow with them. A search text is one
# probe: its exact lookup scans.
APPLIES = {
    Caller.COMPARISON: Applies(fitted=True, routed=True, widened=True, checked=True),
    Caller.FAILURE_MODES: Applies(
        fitted=False, routed=False, widened=False, checked=False, exact=True, pooled=False
    ),
    Caller.EARLIER: Applies(
        fitted=False,
        routed=False,
        widened=False,
        checked=False,
        exact=True,
        pooled=False,
        exact_up_to=50_000,
    ),
    Caller.TIMELINE: Applies(fitted=True, routed=False, widened=False, checked=False),
    Caller.SEARCH: Applies(fitted=False, routed=False, widened=False, checked=True, pooled=False),
    Caller.NEAREST: Applies(
        fitted=False, routed=False, widened=False, checked=False, own_connection=False
    ),
}


def counted_to(tuning: Tuning) -> int:
    """How far the account's comparable chunks of a model must be counted for the rule to
    tell its path: the exact scan's size (one more says it is past it)."""
    return tuning.exact_scan_max_chunks


def plan(caller: Caller, tuning: Tuning, account: Account = Account()) -> LookupPlan:
    """The caller's plan on the account (APPLIES says what of it the caller takes), with the
    path of each of the account's models; failure modes are exact, within their own budget,
    and the timeline reads as many candidates as it counts."""
    applies = APPLIES[caller]
    fitted = account.fitted_ef_search if applies.fitted and tuning.ef_search_fitted else None
    ef_search = min(fitted, tuning.ef_search) if fitted is not None else tuning.ef_search
    if not applies.own_connection and account.caller_ef_search is not None:
        ef_search = account.caller_ef_search
    routed = applies.routed and account.routed_exact
    wider = applies.widened and tuning.ef_search_retry > tuning.ef_search
    timeline = caller is Caller.TIMELINE
    decided = LookupPlan(
        caller=caller,
        exact=applies.exact or routed,
        routed=routed,
        pooled=applies.pooled,
        exact_scan_max_chunks=(
            tuning.exact_scan_max_chunks if applies.exact_up_to is None else applies.exact_up_to
        ),
        ef_search=ef_search,
        widen_ef_search=tuning.ef_search_retry if wider else None,
        overfetch=ranking.TIMELINE_NEIGHBOURS_PER_PROBE if timeline else tuning.overfetch,
        check_budget_ms=tuning.verify_budget_ms if applies.checked else 0,
        timeout_ms=(
            tuning.failure_modes_timeout_ms if applies.exact else tuning.comparison_timeout_ms
        ),
    )
    paths = {
        model: decided.path(facts.comparable, facts.own_index, facts.registered)
        for model, facts in account.models.items()
    }
    return replace(decided, paths=paths)
