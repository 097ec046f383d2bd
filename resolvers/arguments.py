"""The arguments of a comparison: defaults and bounds declared once, checked here."""

from __future__ import annotations

from dataclasses import dataclass
from uuid import UUID

from resolvers.cursors import Cursors, Position
from resolvers.errors import BadArgument

DEFAULT_LIMIT = 5
DEFAULT_MAX_MATCHES = 2
LIMIT_BOUNDS = (1, 20)
MAX_MATCHES_BOUNDS = (0, 5)
WINDOW_DAYS_BOUNDS = (1, 365)


@dataclass(frozen=True, slots=True)
class SimilarArgs:
    limit: int = DEFAULT_LIMIT
    max_matches_per_session: int = DEFAULT_MAX_MATCHES
    window_days: int | None = None
    include_match_text: bool = True
    after: Position | None = None

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
        session_id: UUID,
        cursors: Cursors,
    ) -> SimilarArgs:
        """Validate bounds, and open the cursor for this session's list with these arguments;
        `names` maps each argument to the caller's spelling of it."""
        for name, value, (low, high) in (
            ("limit", limit, LIMIT_BOUNDS),
            ("max_matches_per_session", max_matches_per_session, MAX_MATCHES_BOUNDS),
            ("window_days", window_days, WINDOW_DAYS_BOUNDS),
        ):
            if value is not None and not low <= value <= high:
                raise BadArgument(names[name], f"must be between {low} and {high}, got {value}")
        after = None
        if cursor is not None:
            after = cursors.open_neighbours(
                cursor, session_id, window_days, max_matches_per_session, names["cursor"]
            )
        return cls(limit, max_matches_per_session, window_days, include_match_text, after)
