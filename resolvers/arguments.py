"""The arguments of a comparison: bounds checked, the paging cursor decoded."""

from __future__ import annotations

import base64
import binascii
import json
from dataclasses import dataclass
from uuid import UUID

from resolvers import ranking

LIMIT_BOUNDS = (1, 20)
MAX_MATCHES_BOUNDS = (0, 5)
WINDOW_DAYS_BOUNDS = (1, 365)


class BadArgument(ValueError):
    """A caller's argument is out of bounds or malformed; names the argument."""

    def __init__(self, argument: str, message: str) -> None:
        super().__init__(f"{argument}: {message}")
        self.argument = argument


@dataclass(frozen=True, slots=True)
class SimilarArgs:
    limit: int = 5
    max_matches_per_session: int = 2
    window_days: int | None = None
    include_match_text: bool = True
    after: tuple[float, float, UUID] | None = None

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
    ) -> SimilarArgs:
        """Validate bounds; `names` maps each argument to the caller's spelling of it."""
        for name, value, (low, high) in (
            ("limit", limit, LIMIT_BOUNDS),
            ("max_matches_per_session", max_matches_per_session, MAX_MATCHES_BOUNDS),
            ("window_days", window_days, WINDOW_DAYS_BOUNDS),
        ):
            if value is not None and not low <= value <= high:
                raise BadArgument(names[name], f"must be between {low} and {high}, got {value}")
        after = None if cursor is None else decode_cursor(cursor, names["cursor"])
        return cls(limit, max_matches_per_session, window_days, include_match_text, after)


def encode_cursor(neighbour: ranking.Neighbour) -> str:
    raw = json.dumps([neighbour.score, neighbour.similarity, str(neighbour.session_id)])
    return base64.urlsafe_b64encode(raw.encode()).decode().rstrip("=")


def decode_cursor(cursor: str, name: str) -> tuple[float, float, UUID]:
    try:
        raw = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4))
        score, similarity, session_id = json.loads(raw)
        return (-float(score), -float(similarity), UUID(str(session_id)))
    except (binascii.Error, ValueError, TypeError, UnicodeDecodeError):
        raise BadArgument(name, "is not a cursor this endpoint handed out") from None
