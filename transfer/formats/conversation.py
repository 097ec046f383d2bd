"""Chat messages as replay turns, whatever shape wrote them: OpenAI (string or parts content,
`tool_calls`, role `tool`), Anthropic (`tool_use` / `tool_result` parts) and OpenTelemetry
GenAI (`parts` of type `text`, `tool_call`, `tool_call_response`)."""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

TITLE_CHARS = 100
TEXT_PARTS = frozenset({"text", "input_text", "output_text", "refusal"})
CALL_PARTS = frozenset({"tool_use", "tool_call", "function_call", "server_tool_use"})
RESULT_PARTS = frozenset({"tool_result", "tool_call_response", "function_call_output"})
RESULT_ROLES = frozenset({"tool", "function", "ipython"})


@dataclass(frozen=True, slots=True)
class Turn:
    """One replay row before it has a session: role, kind (message, tool_call, tool_result),
    text, and the tool call id it carries, if any."""

    role: str
    kind: str
    content: str
    call_id: str | None = None


def as_text(value: Any) -> str:
    """Text of a content value: strings as they are, parts' text joined, anything else JSON."""
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    if isinstance(value, list):
        return "\n".join(t for t in (_part_text(p) for p in value) if t)
    return json.dumps(value, ensure_ascii=False)


def _part_text(part: Any) -> str:
    if isinstance(part, Mapping):
        for key in ("text", "content", "refusal", "result", "response", "output"):
            if key in part:
                return as_text(part[key])
        return ""
    return as_text(part)


def _arguments(value: Any) -> str:
    if value is None:
        return ""
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)


def call(name: Any, arguments: Any, call_id: Any, role: str = "assistant") -> Turn:
    text = f"{name or 'tool'} {_arguments(arguments)}".strip()
    return Turn(role, "tool_call", text, None if call_id is None else str(call_id))


def result(content: Any, call_id: Any) -> Turn:
    return Turn("tool", "tool_result", as_text(content), None if call_id is None else str(call_id))


def turns_of(message: Mapping[str, Any]) -> Iterator[Turn]:
    """The turns of one message, in the order its parts came; empty text is no turn."""
    role = str(message.get("role") or "user")
    content = message.get("parts", message.get("content"))
    if role in RESULT_ROLES and not _has_result_parts(content):
        yield result(content, message.get("tool_call_id", message.get("id")))
        return
    texts: list[str] = []
    for part in content if isinstance(content, list) else [content]:
        kind = part.get("type") if isinstance(part, Mapping) else "text"
        kind = kind if isinstance(kind, str) else ""
        if kind in CALL_PARTS and isinstance(part, Mapping):
            yield from _flush(role, texts)
            args = part.get("input", part.get("arguments"))
            yield call(part.get("name"), args, part.get("id", part.get("call_id")), role)
        elif kind in RESULT_PARTS and isinstance(part, Mapping):
            yield from _flush(role, texts)
            body = part.get("content", part.get("response", part.get("result", part.get("output"))))
            yield result(body, part.get("tool_use_id", part.get("id", part.get("call_id"))))
        elif kind in TEXT_PARTS or not isinstance(part, Mapping):
            texts.append(as_text(part) if not isinstance(part, Mapping) else _part_text(part))
        # reasoning, images, files: no replay text
    yield from _flush(role, texts)
    legacy = message.get("function_call")
    calls = list(message.get("tool_calls") or []) + ([legacy] if legacy else [])
    for tool_call in calls:
        if isinstance(tool_call, Mapping):
            function = tool_call.get("function", tool_call)
            if isinstance(function, Mapping):
                name, args = function.get("name"), function.get("arguments")
                yield call(name, args, tool_call.get("id"), role)


def _has_result_parts(content: Any) -> bool:
    return isinstance(content, list) and any(
        isinstance(p, Mapping) and str(p.get("type")) in RESULT_PARTS for p in content
    )


def _flush(role: str, texts: list[str]) -> Iterator[Turn]:
    text = "\n".join(t for t in texts if t)
    texts.clear()
    if text.strip():
        yield Turn(role, "message", text)


def title_of(turns: list[Turn]) -> str | None:
    """The first user message, whitespace collapsed and cut: what an operator calls it."""
    first = next((t.content for t in turns if t.role == "user" and t.kind == "message"), None)
    if first is None:
        return None
    return cut_between_words(" ".join(first.split()), TITLE_CHARS) or None


def cut_between_words(text: str, chars: int) -> str:
    """The text in at most `chars` characters, a cut one ending in `…` and cut between words:
    the word across the cut is left out whole, so a credential is shown whole (and masked)
    or not at all, never as a part its masking no longer recognises (issue 59: 34 of a
    token's 36 characters showed). Empty when the first word alone is too long."""
    if len(text) <= chars:
        return text
    head = text[: chars - 1]
    if not text[chars - 1].isspace():
        head = head[: len(head) - _last_word(head)]
    head = head.rstrip()
    return head + "…" if head else ""


def _last_word(text: str) -> int:
    """The length of the text's last run of non-space characters."""
    words = text.rsplit(maxsplit=1)
    return len(words[-1]) if words and not text[-1:].isspace() else 0
