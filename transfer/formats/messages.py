"""`--format messages`: one session a line in the chat shape agents log,
`{"id"?, "account_id"?, "title"?, "started_at"?, "messages": [{"role", "content", ...}]}`.

Ids, titles and sources the line does not give are derived: id uuid5(account, session_id),
else uuid5(account, the messages' hash); title from the first user message; source_type
from `agent`, source_id from `session_id`, reference from `source`. Other fields are ignored.

The messages array is read one message at a time, twice (its hash, first time and title;
then its turns), so a line of a million messages takes the memory of one (a 42 MB line had
peaked at 2.3 GB, issue 59)."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Iterator
from datetime import UTC, datetime
from typing import Any, TypeVar
from uuid import UUID

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, ValidationError
from pydantic_core import from_json

from transfer.errors import ErrorLog
from transfer.formats.conversation import Turn, title_of, turns_of
from transfer.formats.json_spans import array_elements, member_span
from transfer.formats.replay import Session, session_uuid, stream_records
from transfer.import_format import Record, describe
from transfer.values import Time

EPOCH = datetime(1970, 1, 1, tzinfo=UTC)  # sessions the source gave no time sort first


class Message(BaseModel):
    model_config = ConfigDict(extra="allow", allow_inf_nan=False)

    role: str = Field(min_length=1, max_length=50)
    content: str | list[Any] | dict[str, Any] | None = None
    tool_calls: list[dict[str, Any]] | None = None
    timestamp: Time | None = None


class LineHead(BaseModel):
    """A line's fields but its messages."""

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


class MessagesLine(LineHead):
    messages: list[Message] = Field(min_length=1)


Model = TypeVar("Model", bound=BaseModel)
_AT_INDEX = TypeAdapter(dict[int, Message])  # its errors name the message's index
Read = tuple[Any, Message]  # a message's JSON as written, and the message it validates as


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


def parse(raw: bytes, default_account: UUID | None) -> Iterator[Record]:
    """A line's records: its activity, a turn at a time, then its session."""
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ValueError(f"malformed JSON (not UTF-8: {exc.reason})") from None
    span = member_span(text, "messages")
    if span is None or not text.startswith("[", span[0]):
        yield from _whole(raw, default_account)  # validation says what is wrong with it
        return
    line = _valid(LineHead, _json(text[: span[0]] + "[]" + text[span[1] :]))
    account = _account(line, default_account)
    seen = _Seen()
    for message in _messages(text, span[0]):
        seen.add(message)
    if not seen.count:
        raise ValueError("messages: List should have at least 1 item after validation, not 0")
    session = _session(line, account, seen)
    turns = (timed for message in _messages(text, span[0]) for timed in _timed(message[1]))
    yield from stream_records(session, turns)


def _whole(raw: bytes, default_account: UUID | None) -> Iterator[Record]:
    """A line read whole: one whose messages are not an array, or not JSON at all."""
    data = _json(raw)
    line = _valid(MessagesLine, data)
    account = _account(line, default_account)
    seen = _Seen()
    for message in zip(data["messages"], line.messages, strict=True):
        seen.add(message)
    turns = [timed for message in line.messages for timed in _timed(message)]
    yield from stream_records(_session(line, account, seen), turns)


def _json(raw: bytes | str) -> Any:
    try:
        data = from_json(raw)
    except ValueError as exc:
        raise ValueError(f"malformed JSON ({exc})") from None
    if not isinstance(data, dict):
        raise ValueError("a line of --format messages is one JSON object (a session)")
    return data


def _messages(text: str, start: int) -> Iterator[Read]:
    """Each message of the array at `start`, read and validated, one at a time."""
    for index, element in enumerate(array_elements(text, start)):
        try:
            data = from_json(element)
        except ValueError as exc:
            raise ValueError(f"malformed JSON (messages.{index}: {exc})") from None
        try:
            message = _AT_INDEX.validate_python({index: data})[index]
        except ValidationError as exc:
            raise ValueError(f"messages.{describe(exc)}") from None
        yield data, message


def _valid(model: type[Model], data: Any) -> Model:
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        raise ValueError(describe(exc)) from None


def _account(line: LineHead, default_account: UUID | None) -> UUID:
    account = line.account_id or default_account
    if account is None:
        raise ValueError("account_id: the line names no account and no --account was given")
    return account


class _Seen:
    """What the first read of the messages finds: the hash of their JSON (the session's key
    when the line gives none; the same as json.dumps of the whole array), the first time one
    of them gives, and the first user message (the title)."""

    def __init__(self) -> None:
        self.count = 0
        self.digest = hashlib.sha256(b"[")
        self.first_time: datetime | None = None
        self.titled = False
        self.title: str | None = None

    def add(self, read: Read) -> None:
        data, message = read
        dumped = json.dumps(data, sort_keys=True, ensure_ascii=False)
        self.digest.update((", " if self.count else "").encode() + dumped.encode())
        self.count += 1
        if self.first_time is None:
            self.first_time = message.timestamp
        if not self.titled:  # the first user message is the title, or there is none
            turns = [turn for turn, _ in _timed(message)]
            if any(turn.role == "user" and turn.kind == "message" for turn in turns):
                self.titled, self.title = True, title_of(turns)

    def key(self) -> str:
        digest = self.digest.copy()
        digest.update(b"]")
        return digest.hexdigest()


def _session(line: LineHead, account: UUID, seen: _Seen) -> Session:
    session_id = line.id or session_uuid(account, line.session_id or seen.key())
    return Session(
        id=session_id,
        account_id=account,
        title=line.title or seen.title or line.session_id or str(session_id),
        source_type=line.source_type or line.agent or "messages",
        source_id=line.source_id or line.session_id or str(session_id),
        reference=line.reference or line.source or "",
        status=line.status or "completed",
        started_at=line.started_at or seen.first_time or EPOCH,
    )


def _timed(message: Message) -> list[tuple[Turn, datetime | None]]:
    fields = {**(message.model_extra or {}), **message.model_dump(exclude={"timestamp"})}
    return [(turn, message.timestamp) for turn in turns_of(fields)]
