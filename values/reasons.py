"""The degraded block's reason codes (the contract's, then the product's own), as one enum
that every layer names them by: the data layer and the indexer (which raise some of them),
the resolvers' rules that decide them, and the schema, whose GraphQL enum is this one. A
member is its snake_case code (a `str`), which REST answers; the order is the contract's,
in which an answer lists them."""

from __future__ import annotations

from enum import StrEnum


class Reason(StrEnum):
    SEMANTIC_DISABLED_BY_DEPLOYMENT = "semantic_disabled_by_deployment"
    SEMANTIC_NOT_ENABLED = "semantic_not_enabled"
    SIMILAR_SESSION_NOT_EMBEDDED = "similar_session_not_embedded"
    SEMANTIC_BACKFILL_INCOMPLETE = "semantic_backfill_incomplete"
    SEMANTIC_MODEL_MISMATCH = "semantic_model_mismatch"
    SIMILAR_WINDOW_APPLIED = "similar_window_applied"
    SIMILAR_SESSION_SAMPLED = "similar_session_sampled"
    SIMILAR_NO_COMPARABLE_SESSIONS = "similar_no_comparable_sessions"
    SIMILAR_COMPARISON_TIMED_OUT = "similar_comparison_timed_out"
    SIMILAR_FILTER_APPLIED = "similar_filter_applied"
    SEMANTIC_DAILY_CAP_REACHED = "semantic_daily_cap_reached"
    SIMILAR_TIMELINE_BOUNDED = "similar_timeline_bounded"
    SEARCH_TEXT_NOT_EMBEDDED = "search_text_not_embedded"
    SIMILAR_APPROXIMATE_UNVERIFIED = "similar_approximate_unverified"
    SEARCH_DENSE_LEG_FAILED = "search_dense_leg_failed"
    SIMILAR_NOTHING_CLOSE_ENOUGH = "similar_nothing_close_enough"
    FAILURE_MODES_BOUNDED = "failure_modes_bounded"
    FAILURE_MODES_NOT_EMBEDDED = "failure_modes_not_embedded"
    FAILURE_MODES_REGROUPED = "failure_modes_regrouped"
    SEARCH_TEXT_CREDENTIAL_MASKED = "search_text_credential_masked"
    SEARCH_DENSE_LEG_BEHIND = "search_dense_leg_behind"


# The filters an answer names because they were asked for, not because it came up short.
ASKED = frozenset({Reason.SIMILAR_WINDOW_APPLIED, Reason.SIMILAR_FILTER_APPLIED})
