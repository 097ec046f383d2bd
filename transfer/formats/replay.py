"""A session and its replay turns as import records, for formats that carry conversations
rather than rows: ids the source did not give are derived (uuid5), so re-import is idempotent."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any
from uuid import UUID, uuid5

from pydantic import ValidationError

from transfer.formats.conversation import Turn, cut_between_words
from transfer.import_format import ActivityRecord, Record, SessionRecord, describe

# Session ids are uuid5(SESSION_NAMESPACE, "<account id>:<source's session key>") when the
# source gives no UUID; activity ids are uuid5(session id, "activity:<ordinal>") as the demo's.
SESSION_NAMESPACE = UUID("a3d6c1f2-6b0e-4f5e-9a51-2f8c7d4b9e03")
TURN_SPACING = timedelta(seconds=1)  # between turns the source gave no time


def session_uuid(account_id: UUID, key: str) -> UUID:
    return uuid5(SESSION_NAMESPACE, f"{account_id}:{key}")


TITLE_MAX = 2000


@dataclass(frozen=True, slots=True)
class Session:
    """What a conversation source says about one session."""

    id: UUID
    account_id: UUID
    title: str
    source_type: str
    source_id: str
    reference: str
    status: str
    started_at: datetime
    last_activity_at: datetime | None = None


def records_of(
    session: Session, turns: Sequence[tuple[Turn, datetime | None]], first: int = 0
) -> list[Record]:
    """The session line and one activity line per non-empty turn from ordinal `first` on, in
    order (stream_records, the session line first)."""
    *activity, head = stream_records(session, turns, first)
    return [head, *activity]


def stream_records(
    session: Session, turns: Iterable[tuple[Turn, datetime | None]], first: int = 0
) -> Iterator[Record]:
    """One activity line per non-empty turn, in order, each as its turn is read (those before
    ordinal `first` counted, not made), then the session line (its last activity is the last
    turn's); a turn without a time comes TURN_SPACING after the one before. A ValueError
    names the bad field."""
    ordinal = 0
    clock: datetime | None = None
    for turn, at in turns:
        clock = at if at is not None else _after(clock, session.started_at, ordinal)
        if not turn.content.strip():
            continue
        if ordinal < first:
            ordinal += 1
            continue
        yield _valid(
            ActivityRecord,
            f"turn {ordinal}",
            type="activity",
            id=uuid5(session.id, f"activity:{ordinal}"),
            runtime_session_id=session.id,
            ordinal=ordinal,
            occurred_at=clock,
            role=turn.role[:50],
            kind=turn.kind,
            content=turn.content,
        )
        ordinal += 1
    last = max([session.last_activity_at or session.started_at, clock or session.started_at])
    yield _valid(
        SessionRecord,
        "session",
        type="session",
        id=session.id,
        account_id=session.account_id,
        title=_title(session.title),
        source_type=session.source_type[:200],
        source_id=session.source_id[:500],
        reference=session.reference[:2000],
        status=session.status[:50],
        started_at=session.started_at,
        last_activity_at=last,
    )


def _after(clock: datetime | None, started_at: datetime, ordinal: int) -> datetime:
    """The time of a turn the source gave none: the session's start for the first, else
    TURN_SPACING after the turn before; a ValueError past the last instant times can hold."""
    if clock is None:
        return started_at
    try:  # in UTC: a wall clock ahead of UTC may pass the year 9999 before the instant does
        return clock.astimezone(UTC) + TURN_SPACING
    except OverflowError:
        raise ValueError(
            f"turn {ordinal}: has no time, and {TURN_SPACING.seconds} s after the turn before "
            "is past 9999-12-31T23:59:59.999999Z"
        ) from None


def _valid(model: type[Any], where: str, **fields: Any) -> Any:
    try:
        return model(**fields)
    except ValidationError as exc:
        raise ValueError(f"{where}: {describe(exc)}") from None


def _title(title: str) -> str:
    """A title within SessionRecord's 2,000 characters, cut between words."""
    return title if len(title) <= TITLE_MAX else cut_between_words(title, TITLE_MAX) or "…"
