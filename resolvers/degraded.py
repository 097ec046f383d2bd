"""The degraded block: every way the comparison comes up short, named, never raised."""

from __future__ import annotations

from dataclasses import dataclass

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
}
REASON_ORDER = {code: i for i, code in enumerate(SENTENCES)}


@dataclass(frozen=True, slots=True)
class Degraded:
    semantic: bool
    reasons: tuple[str, ...]

    @property
    def detail(self) -> str | None:
        return " ".join(SENTENCES[r] for r in self.reasons) or None


def degraded(semantic: bool, reasons: set[str]) -> Degraded:
    unknown = reasons - SENTENCES.keys()
    if unknown:
        raise ValueError(f"undocumented reason codes: {sorted(unknown)}")
    return Degraded(semantic, tuple(sorted(reasons, key=REASON_ORDER.__getitem__)))
