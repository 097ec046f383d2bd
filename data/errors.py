"""Domain errors the data layer raises instead of driver exceptions."""

from __future__ import annotations


class ComparisonTimedOut(Exception):
    """The comparison's probe lookup ran past its time budget; its transaction is aborted."""
