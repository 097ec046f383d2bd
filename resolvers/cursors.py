"""The opaque paging cursors: of a neighbour list and of the sessions page."""

from __future__ import annotations

import base64
import binascii
import json
from datetime import datetime
from uuid import UUID

from data.sessions import SessionRow
from resolvers import ranking
from resolvers.errors import BadArgument

NOT_OURS = "is not a cursor this endpoint handed out"


def encode_cursor(neighbour: ranking.Neighbour) -> str:
    raw = json.dumps([neighbour.score, neighbour.similarity, str(neighbour.session_id)])
    return base64.urlsafe_b64encode(raw.encode()).decode().rstrip("=")


def decode_cursor(cursor: str, name: str) -> tuple[float, float, UUID]:
    """The sort key after which a neighbour page starts."""
    try:
        raw = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4))
        score, similarity, session_id = json.loads(raw)
        return (-float(score), -float(similarity), UUID(str(session_id)))
    except (binascii.Error, ValueError, TypeError, UnicodeDecodeError):
        raise BadArgument(name, NOT_OURS) from None


def session_cursor(row: SessionRow) -> str:
    return f"{row.started_at.isoformat()}|{row.id}"


def decode_session_cursor(cursor: str, name: str = "after") -> tuple[datetime, UUID]:
    try:
        started, session_id = cursor.split("|", 1)
        return datetime.fromisoformat(started), UUID(session_id)
    except ValueError:
        raise BadArgument(name, NOT_OURS) from None
