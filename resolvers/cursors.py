"""The opaque paging cursors, signed: a cursor opens only for the list it was handed out for.

A cursor is `<position>.<mac>`: the position (base64 of JSON) and an HMAC-SHA256 over the
position and what the list is bound to (a ranked list: what it ranks and the arguments
that shape the list; the sessions page: the account; a replay: its session), keyed by the
deployment's
cursor secret (data/secrets.py). Anything else is refused before its position is read."""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import json
import math
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any
from uuid import UUID

from data.failures import Pin
from data.sessions import ReplayPosition, SessionRow
from resolvers.errors import BadArgument

NOT_OURS = "is not a cursor this endpoint handed out for this list"
MAX_CURSOR_CHARS = 512  # a handed-out cursor is under 200
MAC_BYTES = 16
MAX_ORDINAL = 2**31 - 1  # an int4, as the column

Position = tuple[float, float, UUID]  # a neighbour's sort key: (-score, -similarity, id)


def _b64(raw: bytes) -> str:
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def _unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


@dataclass(frozen=True, slots=True)
class Cursors:
    """Seals and opens cursors with the deployment's secret."""

    secret: bytes

    def _mac(self, position: str, binding: list[Any]) -> str:
        message = json.dumps([position, *binding], separators=(",", ":")).encode()
        return _b64(hmac.new(self.secret, message, hashlib.sha256).digest()[:MAC_BYTES])

    def seal(self, position: Any, binding: list[Any]) -> str:
        encoded = _b64(json.dumps(position, separators=(",", ":")).encode())
        return f"{encoded}.{self._mac(encoded, binding)}"

    def open(self, cursor: str, binding: list[Any], name: str) -> Any:
        """The position a cursor holds; BadArgument naming `name` unless this deployment
        sealed it for this binding."""
        encoded, _, mac = cursor.partition(".")
        if len(cursor) > MAX_CURSOR_CHARS or not hmac.compare_digest(
            mac.encode(), self._mac(encoded, binding).encode()
        ):
            raise BadArgument(name, NOT_OURS)
        try:
            return json.loads(_unb64(encoded))
        except (binascii.Error, ValueError, RecursionError):  # only with a leaked secret
            raise BadArgument(name, NOT_OURS) from None

    # A ranked list (a session's neighbours, a search's sessions) is bound to what it ranks
    # and the arguments that decide which sessions it holds in which order (not the page
    # size: pages may change size): SimilarArgs.binding.
    def ranked(self, after: Position, binding: list[Any]) -> str:
        return self.seal([after[0], after[1], str(after[2])], binding)

    def open_ranked(self, cursor: str, binding: list[Any], name: str) -> Position:
        position = self.open(cursor, binding, name)
        try:
            score, similarity, neighbour = position
            after = (float(score), float(similarity), UUID(str(neighbour)))
        except (ValueError, TypeError):
            raise BadArgument(name, NOT_OURS) from None
        if not (math.isfinite(after[0]) and math.isfinite(after[1])):
            raise BadArgument(name, NOT_OURS)
        return after

    # The sessions page is bound to the account.
    def sessions(self, row: SessionRow, account_id: UUID) -> str:
        return self.seal([row.started_at.isoformat(), str(row.id)], ["sessions", str(account_id)])

    def open_sessions(
        self, cursor: str, account_id: UUID, name: str = "after"
    ) -> tuple[datetime, UUID]:
        position = self.open(cursor, ["sessions", str(account_id)], name)
        try:
            started, session_id = position
            # In UTC, as the database compares it: a date out of its range fails here.
            return datetime.fromisoformat(started).astimezone(UTC), UUID(session_id)
        except (ValueError, TypeError, OverflowError):
            raise BadArgument(name, NOT_OURS) from None

    # A replay page is bound to its session: a turn's cursor reads on only in that replay.
    def replay(self, session_id: UUID, after: ReplayPosition) -> str:
        return self.seal([after[0], str(after[1])], ["replay", str(session_id)])

    def open_replay(self, cursor: str, session_id: UUID, name: str = "after") -> ReplayPosition:
        position = self.open(cursor, ["replay", str(session_id)], name)
        try:
            ordinal, turn_id = position
            if type(ordinal) is not int or not 0 <= ordinal <= MAX_ORDINAL:
                raise ValueError(ordinal)
            return ordinal, UUID(str(turn_id))
        except (ValueError, TypeError):
            raise BadArgument(name, NOT_OURS) from None

    # A failure-modes list is bound to the account and the arguments that decide which
    # groups it holds (FailureArgs.binding): a group's position is (0 when new else 1, -size,
    # representative id), a member's its start and id (newest first). A group's position
    # carries the pin of the question (its window's end and the data's watermark), so every
    # page after it is of one grouping.
    def failure_groups(self, after: tuple[int, int, UUID], pin: Pin, binding: list[Any]) -> str:
        return self.seal([after[0], after[1], str(after[2]), *_pinned(pin)], binding)

    def open_failure_groups(
        self, cursor: str, binding: list[Any], name: str
    ) -> tuple[tuple[int, int, UUID], Pin]:
        position = self.open(cursor, binding, name)
        try:
            new, size, representative, end, watermark = position
            if type(new) is not int or type(size) is not int:
                raise ValueError(position)
            return (new, size, UUID(str(representative))), _pin(end, watermark)
        except (ValueError, TypeError, OverflowError):
            raise BadArgument(name, NOT_OURS) from None

    def failure_members(self, after: tuple[datetime, UUID], binding: list[Any]) -> str:
        return self.seal([after[0].isoformat(), str(after[1])], binding)

    def open_failure_members(
        self, cursor: str, binding: list[Any], name: str
    ) -> tuple[datetime, UUID]:
        position = self.open(cursor, binding, name)
        try:
            started, session_id = position
            return datetime.fromisoformat(started).astimezone(UTC), UUID(str(session_id))
        except (ValueError, TypeError, OverflowError):
            raise BadArgument(name, NOT_OURS) from None

    # A question's pin alone (`asOf`): what a later request for a group's members, or any
    # page, names to be answered from the same grouping. Sealed apart from the members'
    # cursors of the same binding: neither opens as the other.
    def failure_pin(self, pin: Pin, binding: list[Any]) -> str:
        return self.seal(_pinned(pin), [*binding, "as_of"])

    def open_failure_pin(self, token: str, binding: list[Any], name: str) -> Pin:
        position = self.open(token, [*binding, "as_of"], name)
        try:
            end, watermark = position
            return _pin(end, watermark)
        except (ValueError, TypeError, OverflowError):
            raise BadArgument(name, NOT_OURS) from None


def _pinned(pin: Pin) -> list[str]:
    return [pin.window_end.isoformat(), pin.watermark]


def _pin(end: Any, watermark: Any) -> Pin:
    if type(watermark) is not str:
        raise ValueError(watermark)
    return Pin(datetime.fromisoformat(str(end)).astimezone(UTC), watermark)
