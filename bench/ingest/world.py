"""The benchmark's database: the "other" account (the demo's tau-bench corpus, as
`similar-sessions demo --lexical-only` loads it) and the "stream" account, imported with keys
to read and to ingest and holding both corpora but the sessions to replay as its history,
indexed; each session to replay has a twin there (a session of the same task)."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any
from uuid import UUID, uuid5

from bench.common.databases import recreate
from bench.ingest.agents import Replay
from bench.quality.labelled import Corpus, Session, coding_agents, tau_bench
from config.settings import Settings
from data.engine import make_engine
from data.migrate import migrate
from data.server import resolve_url
from indexer import demo
from indexer.commands import config_from, load_demo, registry_for
from indexer.worker import index_once
from transfer.formats.replay import session_uuid
from transfer.importing import import_lines

DATABASE = "ss_bench_ingest"
NAMESPACE = UUID("5b0e2c4a-7f19-4d3e-9a61-0c8d2e4f6a17")
STREAM_ACCOUNT = uuid5(NAMESPACE, "account:stream")
VIEW_KEY = "sk-bench-ingest-view"
# the stream account's own reads, asked apart from the freshness probes' (each key has its rate)
OWN_KEY = "sk-bench-ingest-own"
INGEST_KEY = "sk-bench-ingest-write"
OTHER_KEY = demo.DEMO_API_KEY
OTHER_SESSION = demo.session_id(0, 0)
# a session whose replay re-sends more than this (its chat spans' inputs together) is kept as
# history, not replayed: one coding session re-sends 11 MB, a body past the 16 MiB limit
REPLAY_MAX_CHARS = 1_500_000
HELD_OUT = {"tau-bench": 1, "coding-agents": 1}  # sessions of each task replayed, not history
T0 = datetime.now(UTC) - timedelta(days=30)


@dataclass(frozen=True, slots=True)
class World:
    url: str
    replays: tuple[Replay, ...]
    twins: dict[str, UUID]  # a replayed session's name: a session of its task in the history
    history: dict[str, int]  # sessions of history, by corpus
    dense: bool
    prepared_s: float

    @property
    def own_session(self) -> UUID:
        """A session of the stream account's history whose neighbours the bench asks for
        while the account streams: the twin of the first coding session replayed."""
        return self.twins[min(n for n in self.twins if not n.startswith("airline/"))]


def history_id(corpus: str, name: str) -> UUID:
    return uuid5(NAMESPACE, f"{corpus}:{name}")


def replayed_id(conversation: str) -> UUID:
    """The session the receiver makes of a conversation (transfer/formats/spans.py)."""
    return session_uuid(STREAM_ACCOUNT, f"otlp:{conversation}")


def resent_chars(session: Session) -> int:
    total = seen = 0
    for turn in session.turns:
        if turn.role == "assistant":
            total += seen
        seen += len(turn.content)
    return total


def split(corpus: Corpus) -> tuple[list[Session], list[Session]]:
    """(history, to replay): the first sessions of each task (by name) are replayed."""
    by_task: dict[str, list[Session]] = {}
    for session in sorted(corpus.sessions, key=lambda s: s.name):
        by_task.setdefault(session.task, []).append(session)
    history: list[Session] = []
    replayed: list[Session] = []
    for sessions in by_task.values():
        held = HELD_OUT[corpus.name]
        for session in sessions[:held]:
            (replayed if resent_chars(session) <= REPLAY_MAX_CHARS else history).append(session)
        history += sessions[held:]
    return history, replayed


def records(history: dict[str, list[Session]], dense: bool) -> Iterator[dict[str, Any]]:
    yield {
        **demo.account_record(demo.DEMO_MODEL, demo.DENSE_MODEL if dense else None),
        "id": str(STREAM_ACCOUNT),
        "name": "bench ingest stream",
        "api_keys": [
            {"key": VIEW_KEY, "scopes": ["view_runtime_sessions"]},
            {"key": OWN_KEY, "scopes": ["view_runtime_sessions"]},
            {"key": INGEST_KEY, "scopes": ["ingest_runtime_sessions"]},
        ],
    }
    position = 0
    for corpus, sessions in history.items():
        for session in sessions:
            sid = history_id(corpus, session.name)
            started = T0 + position * timedelta(minutes=20)
            position += 1
            yield {
                "type": "session",
                "id": str(sid),
                "account_id": str(STREAM_ACCOUNT),
                "title": session.title or session.name,
                "source_type": corpus,
                "source_id": session.name,
                "reference": session.name,
                "status": "completed",
                "started_at": started.isoformat(),
                "last_activity_at": (
                    started + len(session.turns) * timedelta(seconds=20)
                ).isoformat(),
            }
            for ordinal, turn in enumerate(session.turns):
                yield {
                    "type": "activity",
                    "id": str(uuid5(sid, f"activity:{ordinal}")),
                    "runtime_session_id": str(sid),
                    "ordinal": ordinal,
                    "occurred_at": (started + ordinal * timedelta(seconds=20)).isoformat(),
                    "role": turn.role,
                    "kind": turn.kind,
                    "content": turn.content,
                    "api_usage_id": None,
                }


async def prepare(settings: Settings, dense: bool) -> World:
    """A fresh database holding the two accounts, indexed."""
    started = time.perf_counter()
    server = resolve_url(settings.database_url, settings.data_dir)
    url = await recreate(server, DATABASE)
    engine = make_engine(url, statement_timeout_ms=0)
    try:
        await migrate(engine)
        config, registry = config_from(settings, progress=False), registry_for(settings)
        await load_demo(engine, config, registry, dense=False)
        history: dict[str, list[Session]] = {}
        replays: list[Replay] = []
        twins: dict[str, UUID] = {}
        for corpus in (tau_bench(), coding_agents()):
            kept, replayed = split(corpus)
            history[corpus.name] = kept
            first_of_task: dict[str, Session] = {}
            for session in kept:
                first_of_task.setdefault(session.task, session)
            for session in replayed:
                twin = first_of_task.get(session.task)
                if twin is None:
                    continue
                twins[session.name] = history_id(corpus.name, twin.name)
                replays.append(Replay.of(corpus.name, session))
        lines = [json.dumps(r) for r in records(history, dense)]
        async with engine.begin() as conn:
            await import_lines(conn, "bench-ingest-history", lines)
        await index_once(engine, registry, config, account_ids=[STREAM_ACCOUNT])
    finally:
        await engine.dispose()
    # two corpora interleaved, so that every stretch of the stream replays both
    tau = [r for r in replays if r.corpus == "tau-bench"]
    coding = [r for r in replays if r.corpus != "tau-bench"]
    mixed = [r for pair in zip(tau, coding, strict=False) for r in pair]
    mixed += tau[len(coding) :] + coding[len(tau) :]
    return World(
        url,
        tuple(mixed),
        twins,
        {name: len(sessions) for name, sessions in history.items()},
        dense,
        time.perf_counter() - started,
    )
