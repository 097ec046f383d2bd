"""The two labelled corpora as sessions of plain activity: tau-bench airline (the demo
corpus) and coding-agents. Same task = relevant; `agent` tells runs apart."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any
from uuid import UUID, uuid5

from indexer import demo

SHARED = Path("/work/shared/data")
CODING = Path(__import__("os").environ.get("CODING_AGENTS", SHARED / "coding-agents"))
NAMESPACE = UUID("a3c1f0de-61a4-4b8e-9d0c-2f6e8b7c5a10")
T0 = datetime(2024, 1, 1, tzinfo=UTC)
TURN = timedelta(seconds=20)


@dataclass(frozen=True, slots=True)
class Turn:
    role: str
    kind: str
    content: str


@dataclass(frozen=True, slots=True)
class Session:
    id: UUID
    name: str  # stable label: the corpus's own session id
    task: str
    agent: str
    title: str
    turns: tuple[Turn, ...]


@dataclass(frozen=True, slots=True)
class Corpus:
    name: str
    sessions: list[Session]

    @property
    def account_id(self) -> UUID:
        return uuid5(NAMESPACE, f"account:{self.name}")

    @property
    def api_key(self) -> str:
        return f"sk-bench-quality-{self.name}"


def tau_bench() -> Corpus:
    sessions = []
    for item in demo.load_corpus():
        task, trial = int(item["task_id"]), int(item["trial"])
        turns = tuple(Turn(*t) for t in demo.activity_of(item))
        sessions.append(
            Session(
                demo.session_id(task, trial),
                f"airline/task-{task}/trial-{trial}",
                str(task),
                "gpt-4o",
                demo.title_of(item),
                turns,
            )
        )
    return Corpus("tau-bench", sessions)


def coding_agents(path: Path = CODING / "sessions.jsonl") -> Corpus:
    sessions = []
    with path.open(encoding="utf-8") as handle:
        for line in handle:
            item = json.loads(line)
            turns = tuple(
                Turn(m["role"], "tool_result" if m["role"] == "tool" else "message", m["content"])
                for m in item["messages"]
                if m.get("content")
            )
            first = next((t.content for t in turns if t.role == "user"), "")
            title = " ".join(first.split())[:99]
            sessions.append(
                Session(
                    uuid5(NAMESPACE, item["session_id"]),
                    item["session_id"],
                    item["task_id"],
                    item["agent"],
                    title,
                    turns,
                )
            )
    return Corpus("coding-agents", sessions)


CORPORA: dict[str, Callable[[], Corpus]] = {"tau-bench": tau_bench, "coding-agents": coding_agents}


def records(corpus: Corpus, model: tuple[str, str, int]) -> Iterator[dict[str, Any]]:
    """The corpus in the import format: one account with a key, sessions, plain activity."""
    yield {  # the demo's account, under the corpus's own id, name and key
        **demo.account_record(model),
        "id": str(corpus.account_id),
        "name": f"bench {corpus.name}",
        "api_keys": [{"key": corpus.api_key, "scopes": ["view_runtime_sessions"]}],
    }
    for position, session in enumerate(corpus.sessions):
        started = T0 + position * timedelta(hours=6)
        yield {
            "type": "session",
            "id": str(session.id),
            "account_id": str(corpus.account_id),
            "title": session.title or session.name,
            "source_type": corpus.name,
            "source_id": session.name,
            "reference": session.name,
            "status": "completed",
            "started_at": started.isoformat(),
            "last_activity_at": (started + len(session.turns) * TURN).isoformat(),
        }
        for ordinal, turn in enumerate(session.turns):
            yield {
                "type": "activity",
                "id": str(uuid5(session.id, f"activity:{ordinal}")),
                "runtime_session_id": str(session.id),
                "ordinal": ordinal,
                "occurred_at": (started + ordinal * TURN).isoformat(),
                "role": turn.role,
                "kind": turn.kind,
                "content": turn.content,
                "api_usage_id": None,
            }
