"""A tool answer's short text, for a model reading it: band words, titles, the terms that
make a match, how each session ended, and the degraded block when there is one. The
structured content holds everything; this says what matters in a few lines."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

MAX_LINES = 12


def _degraded(answer: dict[str, Any]) -> list[str]:
    block = answer.get("degraded") or {}
    reasons = block.get("reasons") or []
    if not reasons:
        return []
    return [
        f"degraded: {', '.join(reasons)}" + (f" ({block['detail']})" if block["detail"] else "")
    ]


def _terms(neighbour: dict[str, Any]) -> str:
    terms: list[str] = []
    for match in neighbour.get("matches") or []:
        for term in match.get("shared_terms") or []:
            if term not in terms:
                terms.append(term)
    return f"; shares {', '.join(terms[:5])}" if terms else ""


def _ranked(answer: dict[str, Any], what: str) -> str:
    listed = answer["results"] or answer["nearest"]
    head = f"{len(answer['results'])} {what}" + (
        f" (none passed the floor; the {len(listed)} nearest below it)"
        if not answer["results"] and listed
        else ""
    )
    lines = [head + ":"]
    for n in listed[:MAX_LINES]:
        lines.append(
            f"- {n['band']} {n['similarity']:.2f} {n['title']!r} ({n['runtime_session_id']}), "
            f"ended {n['session_status']}{_terms(n)}"
        )
    return "\n".join(lines + _degraded(answer))


def similar(answer: dict[str, Any]) -> str:
    return _ranked(answer, "sessions went the same way")


def search(answer: dict[str, Any]) -> str:
    return _ranked(answer, "sessions match the description")


def failures(answer: dict[str, Any]) -> str:
    lines = [
        f"{answer['group_count']} failure groups among {answer['compared']} sessions of the "
        f"last {answer['window_days']} days:"
    ]
    for g in answer["groups"][:MAX_LINES]:
        before = g["seen_before"]
        kind = "new" if g["is_new"] else "recurring"
        kind += f" (seen before: {before['title']!r})" if before else ""
        terms = f"; shares {', '.join(g['shared_terms'])}" if g.get("shared_terms") else ""
        lines.append(
            f"- {g['size']} sessions, {kind}: {g['representative']['title']!r} "
            f"({g['representative']['id']}), last ended {g['last']['status']}{terms}"
        )
    if answer["has_next_page"]:
        lines.append(f"more groups: pass cursor {answer['end_cursor']}")
    return "\n".join(lines + _degraded(answer))


def session(answer: dict[str, Any]) -> str:
    page = answer["replay_page"]
    lines = [f"{answer['title']!r} ({answer['id']}), {answer['status']}"]
    for turn in page["nodes"][:MAX_LINES]:
        text = " ".join(turn["content"].split())
        lines.append(f"{turn['ordinal']} {turn['role']}/{turn['kind']}: {text[:160]}")
    shown = len(page["nodes"])
    if shown > MAX_LINES:
        lines.append(f"... {shown - MAX_LINES} more turns in the structured content")
    if page["has_next_page"] and page["nodes"]:
        lines.append(f"more turns: from_turn {page['nodes'][-1]['ordinal'] + 1}")
    return "\n".join(lines)


TEXTS: dict[str, Callable[[dict[str, Any]], str]] = {
    "find_similar_sessions": similar,
    "search_sessions": search,
    "failure_modes": failures,
    "get_session": session,
}
