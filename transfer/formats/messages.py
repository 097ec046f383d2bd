"""`--format messages`: one session a line in the chat shape agents log,
`{"id"?, "account_id"?, "title"?, "started_at"?, "messages": [{"role", "content", ...}]}`.

Ids, titles and sources the line does not give are derived: id uuid5(account, session_id),
else uuid5(account, the messages' hash); title from the first user message; source_type
from `agent`, source_id from `session_id`, reference from `source`. Other fields are ignored."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Iterator
from datetime import UTC, datetime
from typing import Any
from uuid import UUID

from pydantic import BaseModel, ConfigDict, Field, ValidationError
from pydantic_core import from_json

from transfer.errors import ErrorLog
from transfer.formats.conversation import Turn, title_of, turns_of
from transfer.formats.replay import Session, records_of, session_uuid
from transfer.import_format import Record, describe
from transfer.values import Time

EPOCH = datetime(1970, 1, 1, tzinfo=UTC)  # sessions the source gave no time sort first


class Message(BaseModel):
    model_config = ConfigDict(extra="allow", allow_inf_nan=False)

    role: str = Field(min_length=1, max_length=50)
    content: str | list[Any] | dict[str, Any] | None = None
    tool_calls: list[dict[str, Any]] | None = None
    timestamp: Time | None = None


class MessagesLine(BaseModel):
    model_config = ConfigDict(extra="ignore", allow_inf_nan=False)

    id: UUID | None = None
    account_id: UUID | None = None
    session_id: str | None = Field(default=None, min_length=1, max_length=500)
    title: str | None = None
    source_type: str | None = None
    source_id: str | None = None
    reference: str | None = None
    status: str | None = None
    agent: str | None = None
    source: str | None = None
    started_at: Time | None = None
    messages: list[Message] = Field(min_length=1)


def read(
    numbered: Iterable[tuple[int, bytes]], errors: ErrorLog, account_id: UUID | None
) -> Iterator[tuple[int, Record]]:
    """Each line's session and its turns; a bad line goes to errors, whole."""
    for number, raw in numbered:
        try:
            for record in parse(raw, account_id):
                yield number, record
        except ValueError as exc:
            errors.add(number, str(exc))


def parse(raw: bytes, default_account: UUID | None) -> list[Record]:
    try:
        data = from_json(raw)
    except ValueError as exc:
        raise ValueError(f"malformed JSON ({exc})") from None
    if not isinstance(data, dict):
        raise ValueError("a line of --format messages is one JSON object (a session)")
    try:
        line = MessagesLine.model_validate(data)
    except ValidationError as exc:
        raise ValueError(describe(exc)) from None
    account = line.account_id or default_account
    if account is None:
        raise ValueError("account_id: the line names no account and no --account was given")
    timed: list[tuple[Turn, datetime | None]] = [
        (turn, m.timestamp) for m in line.messages for turn in turns_of(_message(m))
    ]
    key = (
        line.session_id
        or hashlib.sha256(
            json.dumps(data["messages"], sort_keys=True, ensure_ascii=False).encode()
        ).hexdigest()
    )
    session_id = line.id or session_uuid(account, key)
    title = line.title or title_of([t for t, _ in timed]) or line.session_id or str(session_id)
    session = Session(
        id=session_id,
        account_id=account,
        title=title,
        source_type=line.source_type or line.agent or "messages",
        source_id=line.source_id or line.session_id or str(session_id),
        reference=line.reference or line.source or "",
        status=line.status or "completed",
        started_at=line.started_at or _first_time(line.messages) or EPOCH,
    )
    return records_of(session, timed)


def _message(message: Message) -> dict[str, Any]:
    return {**(message.model_extra or {}), **message.model_dump(exclude={"timestamp"})}


def _first_time(messages: list[Message]) -> datetime | None:
    return next((m.timestamp for m in messages if m.timestamp is not None), None)
