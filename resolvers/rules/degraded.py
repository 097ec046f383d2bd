"""The degraded block: every way the comparison comes up short, named, never raised."""

from __future__ import annotations

from dataclasses import dataclass

from resolvers.rules.ranking import TIMELINE_NEIGHBOURS_PER_PROBE

# In the contract's order; codes the product adds come after the contract's own.
SENTENCES: dict[str, str] = {
    "semantic_disabled_by_deployment": (
        "Embeddings are turned off for this deployment and this session has no vectors."
    ),
    "semantic_not_enabled": (
        "Embeddings are not enabled for this account and this session has no vectors."
    ),
    "similar_session_not_embedded": "This session has no embedded passages to compare yet.",
    "semantic_backfill_incomplete": (
        "Some passages of this session are still waiting to be embedded; they were not compared."
    ),
    "semantic_model_mismatch": (
        "This session was embedded with a model other than the account's configured one; "
        "it was compared only with sessions embedded by the same model."
    ),
    "similar_window_applied": (
        "Only sessions with passages inside the requested window were compared."
    ),
    "similar_session_sampled": (
        "This session is longer than the probe budget; a sample of its passages was compared."
    ),
    "similar_no_comparable_sessions": (
        "No other session of this account has embedded passages of the same model to compare with."
    ),
    "similar_comparison_timed_out": (
        "The comparison ran past its time budget; the list is empty rather than late."
    ),
    "similar_filter_applied": (
        "Only sessions of the requested status or source type were compared."
    ),
    "semantic_daily_cap_reached": (
        "The account has reached its daily embedding cap; the search text was not embedded."
    ),
    "similar_timeline_bounded": (
        f"The timeline counted among the {TIMELINE_NEIGHBOURS_PER_PROBE} nearest passages of "
        "each probe, and some probe reached that bound: more sessions may match than were "
        "counted."
    ),
    "search_text_not_embedded": (
        "The search text could not be embedded with the account's model; only its words were "
        "compared."
    ),
    "similar_approximate_unverified": (
        "Some passages were looked up in the approximate index, which could not vouch for its "
        "answer, and the exact check ran past its time budget; the list may miss or misorder "
        "neighbours."
    ),
    "search_dense_leg_failed": (
        "The search by meaning (the dense model) could not run; only the text's words were "
        "compared."
    ),
    "similar_nothing_close_enough": (
        "Nothing was close enough to pass the model's floor; the nearest passages, if any, are "
        "offered instead, labelled loose."
    ),
    "failure_modes_bounded": (
        "The window holds more sessions than one request compares; the oldest were left out."
    ),
    "failure_modes_not_embedded": (
        "Some sessions of the window have no embedded passages to compare yet; they are in no "
        "group."
    ),
    "failure_modes_regrouped": (
        "The account's data changed since the page this one follows: the window was grouped "
        "again, as of now, and this page is of the new grouping."
    ),
    "search_text_credential_masked": (
        "The search text holds a credential; it was left out of the search, and no passage is "
        "found by it (shown passages have their credentials masked)."
    ),
}
REASON_ORDER = {code: i for i, code in enumerate(SENTENCES)}
# The sentences that name the window when one was asked for.
WINDOWED: dict[str, str] = {
    "similar_window_applied": "Only passages from the last {days} days were compared.",
    "similar_no_comparable_sessions": (
        "No other session of this account has embedded passages of the same model from the "
        "last {days} days to compare with."
    ),
}


# The sentences that name what was counted, when the answer gives the counts (`values`).
COUNTED: dict[str, str] = {
    "failure_modes_bounded": (
        "The window holds {sessions} sessions and one request compares at most {bound}: the "
        "oldest {left_out}, which started before {compared_since}, were left out."
    ),
    "failure_modes_not_embedded": (
        "{not_embedded} of the sessions compared have no embedded passages yet; they are in no "
        "group."
    ),
}


@dataclass(frozen=True, slots=True)
class Degraded:
    semantic: bool
    reasons: tuple[str, ...]
    window_days: int | None = None
    values: tuple[tuple[str, str], ...] = ()  # what COUNTED's sentences name, when known

    @property
    def detail(self) -> str | None:
        return " ".join(self.sentence(r) for r in self.reasons) or None

    def sentence(self, code: str) -> str:
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


def reasons_for(f: Facts) -> set[str]:
    """The reason codes of a comparison, as the contract defines each. A comparison that
    ran past its budget knows nothing of its session but the window it was asked."""
    asked = {"similar_window_applied"} if f.window_applied else set()
    asked |= {"similar_filter_applied"} if f.filter_applied else set()
    if f.timed_out:
        return {"similar_comparison_timed_out"} | asked
    reasons = asked
    if not f.has_vectors:
        reasons.add("similar_session_not_embedded")
        if not f.deployment_enabled:
            reasons.add("semantic_disabled_by_deployment")
        if not f.account_enabled:
            reasons.add("semantic_not_enabled")
    if f.pending and f.account_enabled and f.deployment_enabled:
        reasons.add("semantic_backfill_incomplete")
    if f.model is not None and f.configured is not None and f.model != f.configured:
        reasons.add("semantic_model_mismatch")
    if f.sampled:
        reasons.add("similar_session_sampled")
    if f.model is not None and not f.found_hits and not f.comparable_elsewhere:
        reasons.add("similar_no_comparable_sessions")
    if f.model is not None and not f.found_hits and f.comparable_elsewhere:
        reasons.add("similar_nothing_close_enough")
    if f.unverified:
        reasons.add("similar_approximate_unverified")
    return reasons


def degraded(
    semantic: bool,
    reasons: set[str],
    window_days: int | None = None,
    values: tuple[tuple[str, str], ...] = (),
) -> Degraded:
    unknown = reasons - SENTENCES.keys()
    if unknown:
        raise ValueError(f"undocumented reason codes: {sorted(unknown)}")
    ordered = tuple(sorted(reasons, key=REASON_ORDER.__getitem__))
    return Degraded(semantic, ordered, window_days, values)
