"""The cursor codec: a cursor opens only with the secret and the binding it was sealed with."""

from __future__ import annotations

import uuid
from typing import Any

import pytest

from resolvers.arguments import SimilarArgs
from resolvers.cursors import Cursors
from resolvers.errors import BadArgument

SESSION = uuid.uuid4()
AFTER = (-0.91, -0.88, uuid.uuid4())


def bound(session: uuid.UUID = SESSION, **args: Any) -> list[Any]:
    return SimilarArgs(**args).binding(("similar", str(session)))


def test_a_sealed_cursor_opens_to_its_position_for_its_own_list_only() -> None:
    cursors = Cursors(b"k" * 32)
    cursor = cursors.ranked(AFTER, bound())
    assert cursors.open_ranked(cursor, bound(), "after") == AFTER
    assert cursors.open_ranked(cursor, bound(limit=17), "after") == AFTER, "any page size"
    for other in (
        bound(uuid.uuid4()),
        bound(window_days=7),
        bound(max_matches_per_session=3),
        bound(statuses=("failed",)),
        bound(source_types=("cron",)),
        SimilarArgs().binding(("search", str(SESSION))),
    ):
        with pytest.raises(BadArgument, match=r"^after: "):
            cursors.open_ranked(cursor, other, "after")
    with pytest.raises(BadArgument):
        Cursors(b"x" * 32).open_ranked(cursor, bound(), "after")


def test_a_tampered_overlong_or_unsigned_cursor_is_refused() -> None:
    cursors = Cursors(b"k" * 32)
    cursor = cursors.ranked(AFTER, bound())
    position, mac = cursor.split(".")
    flipped = position[:-1] + ("A" if position[-1] != "A" else "B")
    for bad in (f"{flipped}.{mac}", position, f"{position}.", "." + mac, cursor + "x" * 600, ""):
        with pytest.raises(BadArgument):
            cursors.open_ranked(bad, bound(), "cursor")


def test_a_signed_cursor_of_the_wrong_shape_is_still_refused() -> None:
    cursors = Cursors(b"k" * 32)
    for position in ([[[[]]]], ["a", "b", "c"], [1, 2], {"x": 1}, [1e400, 0, str(SESSION)]):
        with pytest.raises(BadArgument):
            cursors.open_ranked(cursors.seal(position, bound()), bound(), "after")
    account = uuid.uuid4()
    for position in (
        ["9999-12-31T23:59:59-14:00", str(SESSION)],
        ["not a date", str(SESSION)],
        ["2026-01-01T00:00:00+00:00", "x"],
        [3],
    ):
        sealed = cursors.seal(position, ["sessions", str(account)])
        with pytest.raises(BadArgument):
            cursors.open_sessions(sealed, account)
