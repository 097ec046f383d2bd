"""The formats `similar-sessions import --format` reads, each a function from numbered lines
to numbered records (bad lines go to the error log)."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from uuid import UUID

from transfer.errors import ErrorLog
from transfer.formats import jsonl, messages, otlp
from transfer.import_format import Record

Reader = Callable[
    [Iterable[tuple[int, bytes]], ErrorLog, UUID | None], Iterator[tuple[int, Record]]
]
FORMATS: dict[str, Reader] = {"jsonl": jsonl.read, "messages": messages.read, "otlp": otlp.read}
