"""What one request may spend, decided before it runs or charged while it does: the
comparisons its fields may run, and the replay content it may read and return."""

from __future__ import annotations

from collections.abc import Callable

from config.settings import default_of
from resolvers.errors import LimitExceeded

MAX_SIMILAR_PER_REQUEST = 50


class RequestBudget:
    """The comparisons one request may run, decided once, before any runs, by a plan that
    grants whole fields (schema/comparison_budget.py) within the limit."""

    def __init__(self, limit: int = MAX_SIMILAR_PER_REQUEST) -> None:
        self.limit = limit
        self.granted: frozenset[tuple[str, ...]] | None = None

    def require(
        self, path: tuple[str, ...], plan: Callable[[int], frozenset[tuple[str, ...]]]
    ) -> None:
        """Raise LimitExceeded unless the field at `path` was granted by the plan."""
        if self.granted is None:
            self.granted = plan(self.limit)
        if path not in self.granted:
            raise LimitExceeded(
                ".".join(path),
                "refused, as it could run more comparisons than the request has left "
                "(failureModes takes all of them)",
                self.limit,
                "MAX_SIMILAR_PER_REQUEST",
            )


class ContentBudget:
    """The characters of replay content one request may read, and may return, across every
    alias and session it asks for; a turn past the budget is cut (its `contentTruncated`
    says so). A page read once and shown by many aliases is read once, returned by each."""

    def __init__(self, limit: int = default_of("replay_content_chars")) -> None:
        self.limit, self.left, self.unread = limit, limit, limit

    def take(self, content: str) -> str:
        """The part of `content` the budget still allows returned, charged to it."""
        shown = content[: self.left]
        self.left -= len(shown)
        return shown

    def read(self, chars: int) -> None:
        """Charge what a statement read (it read at most `unread`)."""
        self.unread = max(0, self.unread - chars)
