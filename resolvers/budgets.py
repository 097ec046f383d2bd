"""What one request costs and may spend: its Cost, priced once before it runs (seats,
comparisons, replay turns, selections; an ingest request's spans and bytes), which the queue,
the budgets and the refusals all read; and the replay content it is charged while it runs."""

from __future__ import annotations

from dataclasses import dataclass, field

from config.settings import default_of
from resolvers.errors import LimitExceeded

MAX_SIMILAR_PER_REQUEST = 50
Path = tuple[str, ...]  # response keys from the root, list indices left out


@dataclass(frozen=True, slots=True)
class Refusal:
    """A request refused before it runs (LIMIT_EXCEEDED): what was wrong, the bound that
    refused it (the refusals' metric label) and, when the answer names it, the limit."""

    message: str
    bound: str
    limit: int | None = None


@dataclass(frozen=True, slots=True)
class Cost:
    """What one request costs, priced once from what it asks (schema/cost.py for a GraphQL
    operation; similar_sessions/admission.py for the REST routes and the OTLP receiver)."""

    seats: int = 1  # held in the fair queue while it runs (similar_sessions/fair_queue.py)
    granted: frozenset[Path] = field(default_factory=frozenset)  # comparing fields that may run
    comparisons: int = 0  # the most comparisons the granted fields run
    replay_turns: int = 0  # the most replay turns its replay fields read
    selections: int = 0  # the operation's selections, fragments spread
    spans: int = 0  # an ingest request's spans, once decoded
    bytes: int = 0  # an ingest request's body as sent
    refusal: Refusal | None = None  # a bound the query is past, before validation


class RequestBudget:
    """The comparisons one request may run, decided once, before any runs, by the request's
    Cost, which grants whole fields within the limit (schema/cost.py)."""

    def __init__(self, cost: Cost | None = None, limit: int = MAX_SIMILAR_PER_REQUEST) -> None:
        self.limit = limit
        self.cost = cost

    def require(self, path: Path) -> None:
        """Raise LimitExceeded unless the field at `path` was granted by the request's Cost
        (priced before validation: schema/documents.py)."""
        assert self.cost is not None, "a comparing field runs only in a priced request"
        if path not in self.cost.granted:
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
