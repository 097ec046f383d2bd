"""Where a JSON line's parts are, found without reading its large array whole: the span of a
top-level member's value, and the text of each element of an array, one at a time (each is
read by the C decoder for its end, then dropped)."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator

_SPACE = re.compile(r"[ \t\n\r]*")
_DECODE = json.JSONDecoder().raw_decode


class _Malformed(Exception):
    """Not JSON this scan can follow: the caller reads the line whole, and says why."""


def member_span(text: str, key: str) -> tuple[int, int] | None:
    """Where the value of the object's last top-level member `key` starts and ends in the
    text; None when the text is no JSON object, has no such member, or is malformed."""
    try:
        return _member_span(text, key)
    except (_Malformed, ValueError, RecursionError):
        return None


def _member_span(text: str, key: str) -> tuple[int, int] | None:
    at = _space(text, 0)
    if not text.startswith("{", at):
        return None
    at, span = _space(text, at + 1), None
    while not text.startswith("}", at):
        name, at = _DECODE(text, at)
        at = _space(text, at)
        if not isinstance(name, str) or not text.startswith(":", at):
            raise _Malformed
        start = _space(text, at + 1)
        at = _array_end(text, start) if text.startswith("[", start) else _DECODE(text, start)[1]
        span = (start, at) if name == key else span
        at = _space(text, at)
        if text.startswith(",", at):
            at = _space(text, at + 1)
        elif not text.startswith("}", at):
            raise _Malformed
    return span if _space(text, at + 1) == len(text) else None


def array_elements(text: str, start: int) -> Iterator[str]:
    """The text of each element of the array at `start` (a ValueError past malformed JSON)."""
    for first, last in _spans(text, start):
        if last >= 0:
            yield text[first:last]


def _array_end(text: str, start: int) -> int:
    end = start
    for first, last in _spans(text, start):
        end = first if last < 0 else end
    return end


def _spans(text: str, start: int) -> Iterator[tuple[int, int]]:
    """Where each element of the array at `start` starts and ends, then (where the array
    ends, -1)."""
    at = _space(text, start + 1)
    while not text.startswith("]", at):
        try:
            end = _DECODE(text, at)[1]
        except (ValueError, RecursionError) as exc:
            raise ValueError(f"malformed JSON ({_why(exc)})") from None
        yield at, end
        at = _space(text, end)
        if text.startswith(",", at):
            at = _space(text, at + 1)
            if text.startswith("]", at):
                raise ValueError(f"malformed JSON (a comma before ] at character {at})")
        elif not text.startswith("]", at):
            raise ValueError(f"malformed JSON (expected , or ] at character {at})")
    yield at + 1, -1


def _space(text: str, at: int) -> int:
    found = _SPACE.match(text, at)
    return at if found is None else found.end()


def _why(exc: Exception) -> str:
    return "nested too deeply" if isinstance(exc, RecursionError) else str(exc)
