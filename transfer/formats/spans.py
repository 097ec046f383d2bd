"""OpenTelemetry spans as sessions: the one mapping that the file import (`import --format
otlp`) and the live receiver (`POST /v1/traces`) share, so that the same spans give the same
session ids and turns by either way in (docs/ingest.md).

- A span belongs to a conversation: its `gen_ai.conversation.id`, or its resource's, else its
  `session.id`, or its resource's. A span naming none belongs to the conversation another
  span of its trace names, else to its trace. A conversation spans many traces.
- The session's id is uuid5 of the account and `otlp:<conversation>`, its `sourceType` `otlp`
  and its `sourceId` the conversation (or the trace id).
- Its turns are its spans' GenAI turns in time order, a message a model call sends again
  replayed once (transfer/formats/genai.py), whatever order the spans came in.
- Its status: `failed` once a span of it ends in error; `completed` when a root
  `invoke_agent` span (one in no other `invoke_agent` span) ended after the latest span
  began, or when no span came for the idle time; else `running`."""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import UTC, datetime, timedelta
from typing import Any
from uuid import UUID

from transfer.formats.conversation import Turn, title_of
from transfer.formats.genai import GenAISpan, SpanTurn, replay, replay_needing, span_turns
from transfer.formats.replay import Session, records_of, session_uuid
from transfer.import_format import Record
from transfer.values import MAX_TURN_CHARS

CONVERSATION, SESSION = "gen_ai.conversation.id", "session.id"
INVOKE_AGENT = "invoke_agent"
STATUS_ERROR = (2, "STATUS_CODE_ERROR")
KEY_CHARS = 500  # a conversation id is kept to this many characters (sourceId's bound)
SOURCE_TYPE = "otlp"


@dataclass(frozen=True, slots=True)
class SpanFacts:
    """What the mapping reads of one span: ids (lower-case hex), name, GenAI operation, times
    (ns since the epoch), error, service, the conversation it names itself, and its turns."""

    trace_id: str
    span_id: str
    parent_span_id: str
    name: str
    operation: str
    start: int
    end: int
    failed: bool
    service: str
    conversation: str | None
    turns: tuple[SpanTurn, ...] = ()


def facts_of(
    ids: tuple[str, str, str],
    name: str,
    times: tuple[int, int],
    failed: bool,
    attributes: Mapping[str, Any],
    events: Sequence[tuple[int, str, dict[str, Any]]],
    resource: Mapping[str, Any],
) -> SpanFacts:
    """One span's facts from its decoded parts (ids: trace, span, parent, in hex); a
    ValueError naming the attribute when its GenAI content cannot be read."""
    genai = {k: v for k, v in attributes.items() if k.startswith("gen_ai.")}
    genai_events = [e for e in events if e[1].startswith("gen_ai.")]
    start, end = times
    time_of(start), time_of(end)  # a ValueError past the year 9999
    turns: tuple[SpanTurn, ...] = ()
    if genai or genai_events:
        key = conversation_of(attributes, resource) or ids[0]
        turns = tuple(span_turns(GenAISpan(start, end, genai, genai_events, key)))
    _storable([*ids, name, *(str(v) for v in resource.values() if isinstance(v, str))], turns)
    return SpanFacts(
        trace_id=ids[0].lower(),
        span_id=ids[1].lower(),
        parent_span_id=ids[2].lower(),
        name=name,
        operation=str(genai.get("gen_ai.operation.name") or ""),
        start=start,
        end=end,
        failed=failed,
        service=str(resource.get("service.name") or ""),
        conversation=conversation_of(attributes, resource),
        turns=turns,
    )


def _storable(texts: list[str], turns: tuple[SpanTurn, ...]) -> None:
    """A ValueError naming what no session can hold: a NUL character, a turn past
    MAX_TURN_CHARS (the import's bound too)."""
    for turn, _, _ in turns:
        if len(turn.content) > MAX_TURN_CHARS:
            raise ValueError(
                f"a {turn.kind} of {len(turn.content):,} characters; a turn holds at most "
                f"{MAX_TURN_CHARS:,}"
            )
    if any("\x00" in text for text in [*texts, *(t.content for t, _, _ in turns)]):
        raise ValueError("a text holds a NUL character, which no session can store")


def conversation_of(attributes: Mapping[str, Any], resource: Mapping[str, Any]) -> str | None:
    """The conversation a span names: `gen_ai.conversation.id` on the span or its resource,
    else `session.id` on either; None when it names none."""
    for name in (CONVERSATION, SESSION):
        for source in (attributes, resource):
            value = source.get(name)
            if value is not None and str(value).strip():
                return str(value).strip()[:KEY_CHARS]
    return None


def trace_keys(spans: Iterable[SpanFacts], known: Mapping[str, str]) -> dict[str, str]:
    """The conversation each trace's spans without one of their own go to: the first a span
    of the trace names (in start order), else one known from its spans stored before, else
    the trace itself."""
    named: dict[str, str] = {}
    for span in sorted(spans, key=lambda s: (s.start, s.span_id)):
        if span.conversation is not None:
            named.setdefault(span.trace_id, span.conversation)
        else:
            named.setdefault(span.trace_id, "")
    return {trace: key or known.get(trace) or trace for trace, key in named.items()}


def key_of(span: SpanFacts, keys: Mapping[str, str]) -> str:
    return span.conversation or keys[span.trace_id]


def session_id(account_id: UUID, key: str) -> UUID:
    return session_uuid(account_id, f"{SOURCE_TYPE}:{key}")


def status_of(spans: Sequence[SpanFacts], now: datetime, idle: timedelta) -> str:
    """`failed`, `completed` or `running`, as the module says."""
    if any(s.failed for s in spans):
        return "failed"
    agents = {s.span_id for s in spans if s.operation == INVOKE_AGENT}
    latest = max(s.start for s in spans)
    roots = [s for s in spans if s.operation == INVOKE_AGENT and s.parent_span_id not in agents]
    if any(r.end >= latest and r.end > 0 for r in roots):
        return "completed"
    last = time_of(max(max(s.end, s.start) for s in spans))
    return "completed" if now - last >= idle else "running"


def ordered(spans: Sequence[SpanFacts]) -> list[SpanFacts]:
    """The spans in the one order every replay of them takes (start, then span id)."""
    return sorted(spans, key=lambda s: (s.start, s.span_id))


def replayed(
    spans: Sequence[SpanFacts], fresh: Collection[SpanFacts]
) -> tuple[list[tuple[Turn, int]], list[SpanFacts]]:
    """A session's spans' turns replayed in time order, and its fresh spans (among `spans`)
    with only the turns a replay still needs (transfer/formats/genai.replay_needing): what a
    model call sent again that the session already replayed is left out, so a conversation
    is not stored once a call, and the replay stays the same."""
    spanned = ordered(spans)
    places = {id(s): i for i, s in enumerate(spanned)}
    which = {places[id(s)] for s in fresh}
    turns, needed = replay_needing([(s.start, s.end, list(s.turns)) for s in spanned], which)
    return turns, [replace(spanned[i], turns=tuple(needed[i])) for i in sorted(which)]


def session_records(
    account_id: UUID, key: str, spans: Sequence[SpanFacts], now: datetime, idle: timedelta
) -> list[Record]:
    """The session of one conversation's spans and its turns, as import records; a
    ValueError naming what cannot be stored."""
    return records_of(*session_of(account_id, key, spans, now, idle))


def session_of(
    account_id: UUID,
    key: str,
    spans: Sequence[SpanFacts],
    now: datetime,
    idle: timedelta,
    turns: list[tuple[Turn, int]] | None = None,
) -> tuple[Session, list[tuple[Turn, datetime]]]:
    """The session of one conversation's spans and its turns with their times, in order
    (`turns`: their replay, when the caller has it)."""
    spanned = ordered(spans)
    if turns is None:
        turns = replay([(s.start, s.end, list(s.turns)) for s in spanned])
    timed = [(turn, time_of(at)) for turn, at in turns]
    root = next((s.name for s in spanned if not s.parent_span_id), "")
    service = next((s.service for s in spanned if s.service), "")
    session = Session(
        id=session_id(account_id, key),
        account_id=account_id,
        title=title_of([t for t, _ in timed]) or root or key,
        source_type=SOURCE_TYPE,
        source_id=key,
        reference=" ".join(p for p in (service, root) if p),
        status=status_of(spanned, now, idle),
        started_at=time_of(spanned[0].start),
        last_activity_at=time_of(max(max(s.end, s.start) for s in spanned)),
    )
    return session, timed


def time_of(nanos: int) -> datetime:
    try:
        return datetime(1970, 1, 1, tzinfo=UTC) + timedelta(microseconds=nanos // 1000)
    except OverflowError:
        raise ValueError(f"time {nanos} ns is past the year 9999") from None
