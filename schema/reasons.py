"""DegradedReason: the degraded block's reason codes as a GraphQL enum, derived from the
codes resolvers/rules/degraded.py defines, so a code added there joins the enum. Each member's
value is its snake_case code: what REST, which serialises enums by value, answers."""

from __future__ import annotations

from enum import Enum

import strawberry

from resolvers.rules.degraded import SENTENCES

ReasonCode = Enum(  # type: ignore[misc]  # members from the codes, in the contract's order
    "ReasonCode", [(code.upper(), code) for code in SENTENCES], type=str
)

DegradedReason = strawberry.enum(
    ReasonCode,
    name="DegradedReason",
    description="Why a comparison came up short; REST answers each by its snake_case code.",
)
