"""OpenTelemetry GenAI spans as replay turns. Read, in each span: `gen_ai.system_instructions`,
`gen_ai.input.messages`, `gen_ai.output.messages` (current conventions), the message events
`gen_ai.{system,user,assistant,tool}.message` and `gen_ai.choice` (conventions up to 1.36),
and tool execution (`gen_ai.tool.name`, `gen_ai.tool.call.arguments`, `.result`).

A model call re-sends the conversation so far, so a message already replayed is not replayed
again (counted by role, kind and text; tool calls and results by their call id)."""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Collection, Iterator
from dataclasses import dataclass
from typing import Any

from transfer.formats.conversation import Turn, call, result, turns_of
from transfer.formats.sent_again import SENT_AGAIN

# JSON in an attribute nests at most this deep, measured before it is parsed: json.loads and
# the reader recurse a frame or two a level, and Python's stack ends near 1,000 frames. The
# GenAI message shape takes five levels (list, message, parts, part, arguments), leaving
# tool arguments far more than any tool schema nests; the lines themselves are held to about
# 200 by pydantic-core's parser.
MAX_JSON_DEPTH = 64
# A string, to its closing quote or the end of the text (possessive: linear in its length).
_STRINGS = re.compile(r'"(?:[^"\\]++|\\.?)*+"?', re.DOTALL)
_NOT_BRACKETS = re.compile(r"[^\[\]{}]++")
# JSON's escape of a NUL or an opening bracket (any case of its hex digits)
_ESCAPED = re.compile(r"u00(?:00|5[bB]|7[bB])")
INSTRUCTIONS, EVENT_CONTENT = "gen_ai.system_instructions", "gen_ai.event.content"
INPUT = "gen_ai.input.messages"
ARGUMENTS, RESULT = "gen_ai.tool.call.arguments", "gen_ai.tool.call.result"
EVENT_ROLES = {
    "gen_ai.system.message": "system",
    "gen_ai.user.message": "user",
    "gen_ai.assistant.message": "assistant",
    "gen_ai.tool.message": "tool",
    "gen_ai.choice": "assistant",
}


# A turn of a span, its time (ns) and whether it is history.
SpanTurn = tuple[Turn, int, bool]


@dataclass(frozen=True, slots=True)
class GenAISpan:
    """A span's times (ns), `gen_ai.*` attributes and `gen_ai.*` events (time, name, attrs)."""

    start: int
    end: int
    attributes: dict[str, Any]
    events: list[tuple[int, str, dict[str, Any]]]
    conversation: str | None = None  # whose calls' re-sent messages are read once (sent_again)


def structured(value: Any, name: str) -> Any:
    """An attribute recorded as a JSON string, or in structured form, as the structure; a
    ValueError naming the attribute when its JSON nests deeper than MAX_JSON_DEPTH."""
    if isinstance(value, str) and value[:1] in ("[", "{"):
        if nested_deeper(value, MAX_JSON_DEPTH):
            raise ValueError(f"{name}: JSON nested deeper than {MAX_JSON_DEPTH} levels")
        try:
            return json.loads(value)
        except ValueError:
            return value
    return value


def nested_deeper(text: str, limit: int) -> bool:
    """Whether JSON text opens more than `limit` arrays and objects inside each other (text
    in strings aside), valid JSON or not; one pass, no recursion."""
    if text.count("[") + text.count("{") <= limit:
        return False
    return _deeper(_STRINGS.sub("", text), limit)


def _deeper(unquoted: str, limit: int) -> bool:
    depth = 0
    for bracket in _NOT_BRACKETS.sub("", unquoted):
        depth += 1 if bracket in "[{" else -1
        if depth > limit:
            return True
    return False


def plainly_within(texts: list[str]) -> bool:
    """Whether no reading of the texts can refuse one for its nesting or hold a NUL: neither
    a text as JSON nor any string in it read as JSON again, at any depth, nests deeper than
    MAX_JSON_DEPTH, and no NUL is in them or escaped in them. True is sure; False only means
    the texts must be read to know (transfer/formats/otlp_wire.py `check`).

    Sure because a bracket or a NUL can come from a JSON string only as itself or by the
    escapes \\u005b, \\u007b and \\u0000 (at any depth their letters stay in the text), and
    the brackets inside a text's strings, all counted, bound the nesting of any JSON read
    from them."""
    text = "\n".join(texts)
    if "\x00" in text or ("u00" in text and _ESCAPED.search(text)):
        return False
    return text.count("[") + text.count("{") <= MAX_JSON_DEPTH or all(map(_shallow, texts))


def _shallow(text: str) -> bool:
    opens = text.count("[") + text.count("{")
    if opens <= MAX_JSON_DEPTH:
        return True
    unquoted = _STRINGS.sub("", text)
    quoted = opens - unquoted.count("[") - unquoted.count("{")
    return quoted <= MAX_JSON_DEPTH and not _deeper(unquoted, MAX_JSON_DEPTH)


def _messages(attributes: dict[str, Any], name: str) -> list[dict[str, Any]]:
    value = structured(attributes.get(name), name)
    if isinstance(value, dict):
        value = [value]
    return [m for m in value if isinstance(m, dict)] if isinstance(value, list) else []


def _input_turns(span: GenAISpan) -> list[Turn]:
    """The turns of the messages a model call was sent: of a conversation's calls, only the
    messages after those its last call sent are read (transfer/formats/sent_again.py)."""
    text = span.attributes.get(INPUT)
    if span.conversation and isinstance(text, str) and text[:1] == "[":
        return SENT_AGAIN.turns(span.conversation, text, _read_messages) or []
    return [turn for message in _messages(span.attributes, INPUT) for turn in turns_of(message)]


def _read_messages(text: str) -> list[Turn] | None:
    value = structured(text, INPUT)
    if not isinstance(value, list):
        return None
    return [turn for message in value if isinstance(message, dict) for turn in turns_of(message)]


def _instructions(attributes: dict[str, Any]) -> Iterator[Turn]:
    value = structured(attributes.get(INSTRUCTIONS), INSTRUCTIONS)
    if value:
        yield from turns_of({"role": "system", "content": value})


def _event_turns(name: str, attributes: dict[str, Any]) -> Iterator[Turn]:
    body = structured(attributes.get(EVENT_CONTENT, attributes), f"{name}: {EVENT_CONTENT}")
    if not isinstance(body, dict):
        body = {"content": body}
    if name == "gen_ai.choice":
        body = structured(body.get("message", body), f"{name}: message")
        if not isinstance(body, dict):
            body = {"content": body}
    role = EVENT_ROLES[name]
    message = {"role": role, "content": structured(body.get("content"), f"{name}: content")}
    if "tool_calls" in body:
        message["tool_calls"] = structured(body["tool_calls"], f"{name}: tool_calls")
    if role == "tool":
        message["tool_call_id"] = body.get("id", body.get("tool_call_id"))
    yield from turns_of(message)


def _span_turns(span: GenAISpan) -> Iterator[SpanTurn]:
    """(turn, time, is_history) of one span: history is what a model call was sent again."""
    a = span.attributes
    for turn in _instructions(a):
        yield turn, span.start, True
    for turn in _input_turns(span):
        yield turn, span.start, True
    for time, name, attributes in sorted(span.events, key=lambda e: e[0]):
        if name in EVENT_ROLES:
            for turn in _event_turns(name, attributes):
                yield turn, time or span.start, name != "gen_ai.choice"
    for message in _messages(a, "gen_ai.output.messages"):
        for turn in turns_of({"role": "assistant", **message}):
            yield turn, span.end, False
    if a.get("gen_ai.operation.name") == "execute_tool" or "gen_ai.tool.name" in a:
        call_id = a.get("gen_ai.tool.call.id")
        args = structured(a.get(ARGUMENTS), ARGUMENTS)
        yield call(a.get("gen_ai.tool.name"), args, call_id), span.start, False
        if RESULT in a:
            yield result(structured(a[RESULT], RESULT), call_id), span.end, False


def _key(turn: Turn) -> tuple[str, ...]:
    if turn.call_id:
        return (turn.kind, turn.call_id)
    return (turn.role, turn.kind, turn.content)


def span_turns(span: GenAISpan) -> list[SpanTurn]:
    """The span's turns, each with its time and whether it is history (what a model call was
    sent again); a ValueError naming an attribute whose JSON nests too deep."""
    return list(_span_turns(span))


def replay(spans: list[tuple[int, int, list[SpanTurn]]]) -> list[tuple[Turn, int]]:
    """The turns of spans given as (start, end, their span_turns), in time order, each
    replayed once: a message a later model call sends again is not a turn again."""
    return _replay(spans, ())[0]


def replay_needing(
    spans: list[tuple[int, int, list[SpanTurn]]], which: Collection[int]
) -> tuple[list[tuple[Turn, int]], dict[int, list[SpanTurn]]]:
    """replay() of the spans, and of the spans at these places the turns a replay still
    needs: a key all of whose turns in the span are skipped (sent again, and replayed before
    it as often) is left out. Any span added later before it only replays more, so the replay
    of these spans stays the same with or without what was left out."""
    return _replay(spans, which)


def _replay(
    spans: list[tuple[int, int, list[SpanTurn]]], which: Collection[int]
) -> tuple[list[tuple[Turn, int]], dict[int, list[SpanTurn]]]:
    replayed: Counter[tuple[str, ...]] = Counter()
    turns: list[tuple[int, int, Turn]] = []
    needed: dict[int, list[SpanTurn]] = {}
    for place in sorted(range(len(spans)), key=lambda i: (spans[i][0], spans[i][1])):
        span = spans[place][2]
        if place in which:
            needed[place] = _needed(span, replayed)
        sent: Counter[tuple[str, ...]] = Counter()
        for turn, time, history in span:
            key = _key(turn)
            sent[key] += 1
            if (history or turn.call_id) and sent[key] <= replayed[key]:
                continue
            replayed[key] += 1
            turns.append((time, len(turns), turn))
    ordered = [(turn, time) for time, _, turn in sorted(turns, key=lambda t: (t[0], t[1]))]
    return ordered, needed


def _needed(span: list[SpanTurn], replayed: Counter[tuple[str, ...]]) -> list[SpanTurn]:
    skippable: Counter[tuple[str, ...]] = Counter()
    total: Counter[tuple[str, ...]] = Counter()
    for turn, _, history in span:
        key = _key(turn)
        total[key] += 1
        skippable[key] += 1 if history or turn.call_id else 0
    dropped = {k for k, n in total.items() if skippable[k] == n and n <= replayed[k]}
    return [entry for entry in span if _key(entry[0]) not in dropped]


def replay_turns(spans: list[GenAISpan]) -> list[tuple[Turn, int]]:
    """The trace's turns in time order, each replayed once."""
    return replay([(s.start, s.end, span_turns(s)) for s in spans])
