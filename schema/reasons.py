"""DegradedReason: the degraded block's reason codes as a GraphQL enum, the one enum every
layer names them by (values/reasons.py), so a code added there joins the schema. Each member's
value is its snake_case code: what REST, which serialises enums by value, answers."""

from __future__ import annotations

import strawberry

from values.reasons import Reason

DegradedReason = strawberry.enum(
    Reason,
    name="DegradedReason",
    description="Why a comparison came up short; REST answers each by its snake_case code.",
)
