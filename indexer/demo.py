"""The demo corpus: tau-bench airline sessions as one demo account in the import format.

Ids are uuid5 of stable names, so loading the corpus again changes nothing."""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any
from uuid import UUID, uuid5

from config.settings import REPO_ROOT

CORPUS = REPO_ROOT / "demo" / "tau-bench-airline-gpt4o.json"
DEMO_NAMESPACE = UUID("0c4c0f5e-3d1b-4b8e-8f0a-7a3e2b9d6c41")
DEMO_ACCOUNT_ID = uuid5(DEMO_NAMESPACE, "account")
DEMO_API_KEY = "sk-demo-tau-bench-airline"  # documented on purpose: it opens only the demo account
# documented too: it writes spans into the demo account (POST /v1/traces) and reads nothing
DEMO_INGEST_KEY = "sk-demo-ingest-tau-bench-airline"
DEMO_MODEL = ("local", "lexical-384", 384)  # fitted on the corpus when indexed
# The sessions are spread over the days before the first load, so `windowDays` means something
# on the demo; a later load reuses the first one's times (`first_session_at`), changing nothing.
DEMO_SPAN = timedelta(days=60)
TURN_SPACING = timedelta(seconds=20)
TITLE_CHARS = 100


def session_id(task_id: int, trial: int) -> UUID:
    return uuid5(DEMO_NAMESPACE, f"session:{task_id}:{trial}")


def first_session_id(corpus: list[dict[str, Any]]) -> UUID:
    """The session whose start anchors the others' times."""
    return session_id(int(corpus[0]["task_id"]), int(corpus[0]["trial"]))


def first_session_at(now: datetime) -> datetime:
    """Where a first load starts the corpus: DEMO_SPAN before `now`, on the hour."""
    return (now - DEMO_SPAN).astimezone(UTC).replace(minute=0, second=0, microsecond=0)


def load_corpus(path: Path = CORPUS) -> list[dict[str, Any]]:
    with path.open(encoding="utf-8") as handle:
        data: list[dict[str, Any]] = json.load(handle)
    return data


# The dense model `similar-sessions demo` puts beside the lexical one (unless
# `--lexical-only`): the search's dense leg (tau-bench hit@5 0.820 lexical only, 0.900 with it).
DENSE_MODEL = {"provider": "local", "model": "all-minilm-l6-v2", "dimensions": 384}


def account_record(
    model: tuple[str, str, int] = DEMO_MODEL, dense: dict[str, Any] | None = None
) -> dict[str, Any]:
    provider, name, dims = model
    setting: dict[str, Any] = {
        "enabled": True,
        "provider": provider,
        "model": name,
        "dimensions": dims,
        "scope": "full",
        "daily_cap_usd": None,
    }
    if dense is not None:
        setting["dense"] = dense
    return {
        "type": "account",
        "id": str(DEMO_ACCOUNT_ID),
        "name": "tau-bench airline (demo)",
        "embedding": setting,
        "features": ["similarSessions"],
        "api_keys": [
            {"key": DEMO_API_KEY, "scopes": ["view_runtime_sessions"]},
            {"key": DEMO_INGEST_KEY, "scopes": ["ingest_runtime_sessions"]},
        ],
    }


def title_of(item: dict[str, Any]) -> str:
    """The customer's opening request, which is what an operator would call the session."""
    first = next(
        (m["content"] for m in item["traj"] if m["role"] == "user" and m.get("content")), ""
    )
    text = " ".join(str(first).split())
    return text if len(text) <= TITLE_CHARS else text[: TITLE_CHARS - 1] + "…"


def activity_of(item: dict[str, Any]) -> Iterator[tuple[str, str, str]]:
    """(role, kind, content) for each turn: messages, one row per tool call, tool results."""
    for message in item["traj"]:
        role, content = message["role"], message.get("content")
        if content:
            yield role, "tool_result" if role == "tool" else "message", str(content)
        for call in message.get("tool_calls") or []:
            function = call.get("function", {})
            yield role, "tool_call", f"{function.get('name')} {function.get('arguments', '')}"


def records(
    corpus: list[dict[str, Any]],
    model: tuple[str, str, int] = DEMO_MODEL,
    *,
    first_at: datetime,
    dense: dict[str, Any] | None = None,
) -> Iterator[dict[str, Any]]:
    """The account (with `dense`, its dense model), then each session followed by its
    activity; the sessions start evenly spaced over DEMO_SPAN from `first_at`, in corpus
    order."""
    yield account_record(model, dense)
    spacing = DEMO_SPAN / max(len(corpus), 1)
    for position, item in enumerate(corpus):
        task_id, trial = int(item["task_id"]), int(item["trial"])
        sid = session_id(task_id, trial)
        started = first_at + position * spacing
        turns = list(activity_of(item))
        yield {
            "type": "session",
            "id": str(sid),
            "account_id": str(DEMO_ACCOUNT_ID),
            "title": title_of(item),
            "source_type": "tau-bench",
            "source_id": f"airline/task-{task_id}/trial-{trial}",
            "reference": f"sierra-research/tau-bench gpt-4o-airline.json #{position}",
            "status": "completed" if item.get("reward") == 1.0 else "failed",
            "started_at": started.isoformat(),
            "last_activity_at": (started + len(turns) * TURN_SPACING).isoformat(),
        }
        for ordinal, (role, kind, content) in enumerate(turns):
            yield {
                "type": "activity",
                "id": str(uuid5(sid, f"activity:{ordinal}")),
                "runtime_session_id": str(sid),
                "ordinal": ordinal,
                "occurred_at": (started + ordinal * TURN_SPACING).isoformat(),
                "role": role,
                "kind": kind,
                "content": content,
                "api_usage_id": None,
            }


def task_of(source_id: str) -> int:
    """The tau-bench task of a demo session, from its source_id."""
    return int(source_id.split("/")[1].removeprefix("task-"))
