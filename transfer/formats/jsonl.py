"""`--format jsonl` (the default): the product's own import format, one record a line."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from uuid import UUID

from transfer.errors import ErrorLog
from transfer.import_format import ChunkRecord, Record, parse_line


def read(
    numbered: Iterable[tuple[int, bytes]], errors: ErrorLog, account_id: UUID | None
) -> Iterator[tuple[int, Record]]:
    """Each line's record (every line names its own account or session; the import holds
    them to account_id when it is given)."""
    for number, raw in numbered:
        try:
            record = parse_line(raw)
        except ValueError as exc:
            errors.add(number, str(exc))
            continue
        if isinstance(record, ChunkRecord):
            record.keep_embedding_text(raw)
        yield number, record
