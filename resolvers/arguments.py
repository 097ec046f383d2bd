"""The arguments of a comparison: defaults and bounds declared once, checked here."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

from resolvers.cursors import Cursors, Position
from resolvers.errors import BadArgument

DEFAULT_LIMIT = 5
DEFAULT_MAX_MATCHES = 2
LIMIT_BOUNDS = (1, 20)
MAX_MATCHES_BOUNDS = (0, 5)
WINDOW_DAYS_BOUNDS = (1, 365)
MAX_FILTER_VALUES = 20
MAX_FILTER_CHARS = 200


@dataclass(frozen=True, slots=True)
class SimilarArgs:
    limit: int = DEFAULT_LIMIT
    max_matches_per_session: int = DEFAULT_MAX_MATCHES
    window_days: int | None = None
    include_match_text: bool = True
    after: Position | None = None
    statuses: tuple[str, ...] | None = None  # neighbours only of these statuses
    source_types: tuple[str, ...] | None = None  # ... and of these source types

    @property
    def filtered(self) -> bool:
        return self.statuses is not None or self.source_types is not None

    def binding(self, ranked: tuple[str, ...]) -> list[Any]:
        """What a cursor of this list is bound to: what it ranks (("similar", session id) or
        ("search", account id, text)) and the arguments that decide its order, not the page
        size."""
        return [
            *ranked,
            self.window_days,
            self.max_matches_per_session,
            None if self.statuses is None else list(self.statuses),
            None if self.source_types is None else list(self.source_types),
        ]

    @classmethod
    def checked(
        cls,
        *,
        limit: int,
        max_matches_per_session: int,
        window_days: int | None,
        include_match_text: bool,
        cursor: str | None,
        names: dict[str, str],
        ranked: tuple[str, ...],
        cursors: Cursors,
        statuses: Sequence[str] | None = None,
        source_types: Sequence[str] | None = None,
    ) -> SimilarArgs:
        """Validate bounds and open the cursor for the list `ranked`; `names` maps each
        argument to the caller's spelling of it."""
        for name, value, (low, high) in (
            ("limit", limit, LIMIT_BOUNDS),
            ("max_matches_per_session", max_matches_per_session, MAX_MATCHES_BOUNDS),
            ("window_days", window_days, WINDOW_DAYS_BOUNDS),
        ):
            if value is not None and not low <= value <= high:
                raise BadArgument(names[name], f"must be between {low} and {high}, got {value}")
        args = cls(
            limit,
            max_matches_per_session,
            window_days,
            include_match_text,
            None,
            filter_values(statuses, names.get("statuses", "status")),
            filter_values(source_types, names.get("source_types", "source_type")),
        )
        if cursor is None:
            return args
        after = cursors.open_ranked(cursor, args.binding(ranked), names["cursor"])
        return replace(args, after=after)


def plain_text(value: str, name: str, max_chars: int) -> str:
    """A text argument, stripped: 1 to max_chars characters PostgreSQL can hold (no NUL, no
    lone surrogate, which a JSON string may carry)."""
    text = value.strip()
    if not text or len(text) > max_chars or "\x00" in text or not _encodable(text):
        raise BadArgument(name, f"must be 1 to {max_chars} characters of text, without NUL")
    return text


def _encodable(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def filter_values(values: Sequence[str] | None, name: str) -> tuple[str, ...] | None:
    """A neighbour filter's values, deduplicated and sorted; None when none were given."""
    if values is None or len(values) == 0:
        return None
    if len(values) > MAX_FILTER_VALUES:
        raise BadArgument(name, f"takes at most {MAX_FILTER_VALUES} values, got {len(values)}")
    return tuple(sorted({plain_text(value, name, MAX_FILTER_CHARS) for value in values}))
