"""An import's times are ISO 8601 text with a zone, as the contract says: a number (which
pydantic would read as seconds or milliseconds since 1970), a bare date or a time without a
zone is refused, naming the field and what to write."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from pydantic import ValidationError

from transfer.formats.messages import MessagesLine
from transfer.import_format import describe

MESSAGES = [{"role": "user", "content": "the deploy failed"}]


@pytest.mark.parametrize(
    ("value", "said"),
    [
        (1700000000, "1700000000 is not a time"),
        ("1700000000", "'1700000000' is not a time"),
        (1.7e12, "1700000000000.0 is not a time"),
        ("2026-01-31", "'2026-01-31' is not a time"),
        ("2026-01-31T09:30:00", "timezone"),
    ],
)
def test_a_time_that_is_not_iso_8601_with_a_zone_is_refused(value: object, said: str) -> None:
    with pytest.raises(ValidationError) as refused:
        MessagesLine.model_validate({"messages": MESSAGES, "started_at": value})
    message = describe(refused.value)
    assert message.startswith("started_at: ") and said in message


def test_iso_8601_with_a_zone_is_read() -> None:
    line = MessagesLine.model_validate({"messages": MESSAGES, "started_at": "2026-01-31T09:30Z"})
    assert line.started_at == datetime(2026, 1, 31, 9, 30, tzinfo=UTC)
    with_offset = {"messages": MESSAGES, "started_at": "2026-01-31T10:30:00+01:00"}
    assert MessagesLine.model_validate(with_offset).started_at == line.started_at
