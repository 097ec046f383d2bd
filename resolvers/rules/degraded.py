"""The degraded block: every way the comparison comes up short, named, never raised."""

from __future__ import annotations

from collections.abc import Collection, Iterable
from dataclasses import dataclass

from resolvers.rules.ranking import TIMELINE_NEIGHBOURS_PER_PROBE
from values.reasons import Reason

# In the contract's order; codes the product adds come after the contract's own.
SENTENCES: dict[Reason, str] = {
    Reason.SEMANTIC_DISABLED_BY_DEPLOYMENT: (
        "Embeddings are turned off for this deployment and this session has no vectors."
    ),
    Reason.SEMANTIC_NOT_ENABLED: (
        "Embeddings are not enabled for this account and this session has no vectors."
    ),
    Reason.SIMILAR_SESSION_NOT_EMBEDDED: "This session has no embedded passages to compare yet.",
    Reason.SEMANTIC_BACKFILL_INCOMPLETE: (
        "Some passages of this session are still waiting to be embedded; they were not compared."
    ),
    Reason.SEMANTIC_MODEL_MISMATCH: (
        "This session was embedded with a model other than the account's configured one; "
        "it was compared only with sessions embedded by the same model."
    ),
    Reason.SIMILAR_WINDOW_APPLIED: (
        "Only sessions with passages inside the requested window were compared."
    ),
    Reason.SIMILAR_SESSION_SAMPLED: (
        "This session is longer than the probe budget; a sample of its passages was compared."
    ),
    Reason.SIMILAR_NO_COMPARABLE_SESSIONS: (
        "No other session of this account has embedded passages of the same model to compare with."
    ),
    Reason.SIMILAR_COMPARISON_TIMED_OUT: (
        "The comparison ran past its time budget; the list is empty rather than late."
    ),
    Reason.SIMILAR_FILTER_APPLIED: (
        "Only sessions of the requested status or source type were compared."
    ),
    Reason.SEMANTIC_DAILY_CAP_REACHED: (
        "The account has reached its daily embedding cap; the search text was not embedded."
    ),
    Reason.SIMILAR_TIMELINE_BOUNDED: (
        f"The timeline counted among the {TIMELINE_NEIGHBOURS_PER_PROBE} nearest passages of "
        "each probe, and some probe reached that bound: more sessions may match than were "
        "counted."
    ),
    Reason.SEARCH_TEXT_NOT_EMBEDDED: (
        "The search text could not be embedded with the account's model; only its words were "
        "compared."
    ),
    Reason.SIMILAR_APPROXIMATE_UNVERIFIED: (
        "Some passages were looked up in the approximate index, which could not vouch for its "
        "answer, and the exact check ran past its time budget; the list may miss or misorder "
        "neighbours."
    ),
    Reason.SEARCH_DENSE_LEG_FAILED: (
        "The search by meaning (the dense model) could not run; only the text's words were "
        "compared."
    ),
    Reason.SIMILAR_NOTHING_CLOSE_ENOUGH: (
        "Nothing was close enough to pass the model's floor; the nearest passages, if any, are "
        "offered instead, labelled loose."
    ),
    Reason.FAILURE_MODES_BOUNDED: (
        "The window holds more sessions than one request compares; the oldest were left out."
    ),
    Reason.FAILURE_MODES_NOT_EMBEDDED: (
        "Some sessions of the window have no embedded passages to compare yet; they are in no "
        "group."
    ),
    Reason.FAILURE_MODES_REGROUPED: (
        "The account's data changed since the page this one follows: the window was grouped "
        "again, as of now, and this page is of the new grouping."
    ),
    Reason.SEARCH_TEXT_CREDENTIAL_MASKED: (
        "The search text holds a credential; it was left out of the search, and no passage is "
        "found by it (shown passages have their credentials masked)."
    ),
    Reason.SEARCH_DENSE_LEG_BEHIND: (
        "Some of the account's passages are still waiting for the dense model (sessions "
        "ingested moments ago); the search by meaning did not see them, its words did."
    ),
}
REASON_ORDER = {code: i for i, code in enumerate(Reason)}
# The sentences that name the window when one was asked for.
WINDOWED: dict[Reason, str] = {
    Reason.SIMILAR_WINDOW_APPLIED: "Only passages from the last {days} days were compared.",
    Reason.SIMILAR_NO_COMPARABLE_SESSIONS: (
        "No other session of this account has embedded passages of the same model from the "
        "last {days} days to compare with."
    ),
}


# The sentences that name what was counted, when the answer gives the counts (`values`).
COUNTED: dict[Reason, str] = {
    Reason.FAILURE_MODES_BOUNDED: (
        "The window holds {sessions} sessions and one request compares at most {bound}: the "
        "oldest {left_out}, which started before {compared_since}, were left out."
    ),
    Reason.FAILURE_MODES_NOT_EMBEDDED: (
        "{not_embedded} of the sessions compared have no embedded passages yet; they are in no "
        "group."
    ),
}


@dataclass(frozen=True, slots=True)
class Degraded:
    semantic: bool
    reasons: tuple[Reason, ...]
    window_days: int | None = None
    values: tuple[tuple[str, str], ...] = ()  # what COUNTED's sentences name, when known

    @property
    def detail(self) -> str | None:
        return " ".join(self.sentence(r) for r in self.reasons) or None

    def sentence(self, code: Reason) -> str:
        if self.window_days is not None and code in WINDOWED:
            return WINDOWED[code].format(days=self.window_days)
        if code in COUNTED and self.values:
            return COUNTED[code].format(**dict(self.values))
        return SENTENCES[code]


@dataclass(frozen=True, slots=True)
class Facts:
    """What the reasons of one comparison are decided from."""

    has_vectors: bool  # the session has embedded clear chunks of some model
    pending: int  # its chunks in the account's scope still waiting to be embedded
    account_enabled: bool  # the account has an enabled embedding setting
    deployment_enabled: bool  # the deployment has embeddings on
    model: str | None  # the comparison model
    configured: str | None  # the account's configured model
    window_applied: bool
    filter_applied: bool
    sampled: bool  # more embedded chunks than probes
    found_hits: bool
    comparable_elsewhere: bool  # another session has a comparable chunk (inside the window)
    timed_out: bool
    unverified: bool = False  # an approximate lookup could not vouch, and was not checked


def reasons_for(f: Facts) -> set[Reason]:
    """The reason codes of a comparison, as the contract defines each. A comparison that
    ran past its budget knows nothing of its session but the window it was asked."""
    asked = {Reason.SIMILAR_WINDOW_APPLIED} if f.window_applied else set()
    asked |= {Reason.SIMILAR_FILTER_APPLIED} if f.filter_applied else set()
    if f.timed_out:
        return {Reason.SIMILAR_COMPARISON_TIMED_OUT} | asked
    reasons = asked
    if not f.has_vectors:
        reasons.add(Reason.SIMILAR_SESSION_NOT_EMBEDDED)
        if not f.deployment_enabled:
            reasons.add(Reason.SEMANTIC_DISABLED_BY_DEPLOYMENT)
        if not f.account_enabled:
            reasons.add(Reason.SEMANTIC_NOT_ENABLED)
    if f.pending and f.account_enabled and f.deployment_enabled:
        reasons.add(Reason.SEMANTIC_BACKFILL_INCOMPLETE)
    if f.model is not None and f.configured is not None and f.model != f.configured:
        reasons.add(Reason.SEMANTIC_MODEL_MISMATCH)
    if f.sampled:
        reasons.add(Reason.SIMILAR_SESSION_SAMPLED)
    if f.model is not None and not f.found_hits and not f.comparable_elsewhere:
        reasons.add(Reason.SIMILAR_NO_COMPARABLE_SESSIONS)
    if f.model is not None and not f.found_hits and f.comparable_elsewhere:
        reasons.add(Reason.SIMILAR_NOTHING_CLOSE_ENOUGH)
    if f.unverified:
        reasons.add(Reason.SIMILAR_APPROXIMATE_UNVERIFIED)
    return reasons


def degraded(
    semantic: bool,
    reasons: Collection[str],
    window_days: int | None = None,
    values: tuple[tuple[str, str], ...] = (),
) -> Degraded:
    """The degraded block of these codes (members of Reason, or their codes), in the
    contract's order; a code that is not one is refused."""
    unknown = set(reasons) - SENTENCES.keys()
    if unknown:
        raise ValueError(f"undocumented reason codes: {sorted(unknown)}")
    return Degraded(semantic, in_contract_order(reasons), window_days, values)


def in_contract_order(codes: Iterable[Reason | str]) -> tuple[Reason, ...]:
    """The codes, each once, in the contract's order."""
    return tuple(sorted({Reason(c) for c in codes}, key=REASON_ORDER.__getitem__))
