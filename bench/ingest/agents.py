"""Simulated agents: corpus sessions replayed as GenAI spans through the OpenTelemetry SDK, as
an instrumented agent sends them (examples/otel_agent.py): a TracerProvider per agent, a
BatchSpanProcessor (the SDK's defaults) and the OTLP/HTTP protobuf exporter, gzipped, with the
ingest key's `Authorization` header (bench/ingest/exports.py times it). Each agent replays one
session after another under a new `gen_ai.conversation.id`, paced so that all agents of a
process together end `rate` spans a second (compressed time: a session of 20 turns ends in a
fraction of a second). bench/ingest/offering.py runs them, a process of agents at a time."""

from __future__ import annotations

import itertools
import json
import random
import re
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from opentelemetry import trace
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor
from opentelemetry.trace import Tracer

from bench.ingest.exports import CONVERSATION, Export, TimedExporter
from bench.quality.labelled import Session


@dataclass(frozen=True, slots=True)
class Replay:
    """A corpus session to replay: its turns as (role, kind, content)."""

    corpus: str
    name: str
    task: str
    turns: tuple[tuple[str, str, str], ...]

    @classmethod
    def of(cls, corpus: str, session: Session) -> Replay:
        turns = tuple((t.role, t.kind, t.content) for t in session.turns)
        return cls(corpus, session.name, session.task, turns)

    def varied(self, seed: str, share: float) -> Replay:
        """Another run of the same task: each word of its turns (tool names kept) dropped
        with probability `share`, drawn from `seed` (the conversation id), so that no two
        replays of one session are the same text, as no two runs of a task are."""
        if share <= 0:
            return self
        rng = random.Random(seed)

        def drop(content: str) -> str:
            return WORD.sub(lambda m: "" if rng.random() < share else m.group(0), content)

        turns = tuple(
            (role, kind, _varied_call(content, drop) if kind == "tool_call" else drop(content))
            for role, kind, content in self.turns
        )
        return Replay(self.corpus, self.name, self.task, turns)


WORD = re.compile(r"\S+")
# The share of words each replay drops (bench.ingest's default; --identical-replays: none).
# Verbatim, a 1200 s stream held 45 identical copies of each of its 244 sessions, which agents
# seldom send: every passage a clump of equal vectors, and the account's comparisons cost
# twice as much as varied (bench/results/ingest-varied.md).
VARIED_SHARE = 0.1


def _varied_call(content: str, drop: Callable[[str], str]) -> str:
    """A tool call's text varied past its tool's name (`tool arguments`)."""
    tool, space, arguments = content.partition(" ")
    return tool + space + drop(arguments)


@dataclass(frozen=True, slots=True)
class Offer:
    """What a process of agents is asked to do."""

    endpoint: str
    key: str
    rate: float  # spans a second, all the process's agents together
    seconds: float
    agents: int
    replays: tuple[Replay, ...]
    run: str  # part of every conversation id: a run's sessions are its own
    sized: bool = False  # spans of 1-8 KB (the steps), else the conversation so far
    seed: int = 0
    exporter: type[TimedExporter] = TimedExporter  # each agent's
    varied: float = 0.0  # each replay's share of words dropped (Replay.varied); 0: verbatim
    # every agent started at once, so that its batch processor exports with all the others'
    # (every stream before d8d5818); by default their starts are spread over one schedule
    # delay (offering.start_offsets; bench/results/ingest-floor-both.md)
    aligned: bool = False


class Pacer:
    """Slots `1/rate` seconds apart, shared by the agents of a process."""

    def __init__(self, rate: float) -> None:
        self.step = 1 / rate
        self.next = time.monotonic()
        self.lock = threading.Lock()
        self.behind = 0.0

    def wait(self) -> None:
        with self.lock:
            slot = self.next
            self.next += self.step
        delay = slot - time.monotonic()
        if delay > 0:
            time.sleep(delay)
        else:
            self.behind = -delay


def text(role: str, content: str) -> dict[str, Any]:
    return {"role": role, "parts": [{"type": "text", "content": content}]}


def fitted(messages: list[dict[str, Any]], budget: int) -> list[dict[str, Any]]:
    """The conversation's last messages that fit `budget` characters of content, the oldest
    of them cut to fit (the steps' spans of 1-8 KB)."""
    kept: list[dict[str, Any]] = []
    for message in reversed(messages):
        content = json.dumps(message)
        if len(content) <= budget:
            kept.append(message)
            budget -= len(content)
            continue
        if budget > 200:
            kept.append(text(message["role"], json.dumps(message["parts"])[: budget - 100]))
        break
    return kept[::-1]


class Agent:
    """One simulated agent: its own TracerProvider, BatchSpanProcessor and exporter."""

    def __init__(
        self, number: int, offer: Offer, sink: list[Export], acked: Callable[[str, float], None]
    ) -> None:
        self.number = number
        self.offer = offer
        self.exporter = offer.exporter(offer.endpoint, offer.key, sink, acked)
        self.provider = TracerProvider(
            resource=Resource.create({"service.name": f"bench-ingest-agent-{number}"})
        )
        self.provider.add_span_processor(BatchSpanProcessor(self.exporter))
        self.tracer: Tracer = self.provider.get_tracer("bench.ingest")
        self.rng = random.Random(offer.seed * 1000 + number)
        self.ended = 0

    def size(self) -> int | None:
        return self.rng.randint(1024, 8192) if self.offer.sized else None

    def session(self, replays: Iterator[Replay], pacer: Pacer, until: float) -> None:
        """Replay sessions until `until`."""
        for n in itertools.count():
            if time.monotonic() >= until:
                return
            replay = next(replays)
            conversation = f"{self.offer.run}-{self.number}-{n}|{replay.name}"
            replay = replay.varied(conversation, self.offer.varied)
            self.replay(conversation, replay, pacer, until)

    def replay(self, conversation: str, replay: Replay, pacer: Pacer, until: float) -> None:
        """One session: an invoke_agent root, a chat span per assistant turn (the conversation
        so far in, the turn out), an execute_tool span per tool result; the root ends last."""
        common = {CONVERSATION: conversation, "gen_ai.provider.name": "bench"}
        root = self.tracer.start_span(
            f"invoke_agent {replay.corpus}",
            attributes={**common, "gen_ai.operation.name": "invoke_agent"},
        )
        context = trace.set_span_in_context(root)
        history: list[dict[str, Any]] = []
        calls: list[tuple[str, str, str]] = []  # (call id, tool, arguments) awaiting a result
        for step, (role, kind, content) in enumerate(replay.turns):
            if time.monotonic() >= until:
                break
            if role in ("system", "user"):
                history.append(text(role, content))
                continue
            if role == "assistant":
                if kind == "tool_call":
                    tool, _, arguments = content.partition(" ")
                    call_id = f"call_{step}"
                    calls.append((call_id, tool, arguments))
                    output = {
                        "role": "assistant",
                        "parts": [
                            {
                                "type": "tool_call",
                                "id": call_id,
                                "name": tool,
                                "arguments": arguments,
                            }
                        ],
                    }
                else:
                    output = text("assistant", content)
                pacer.wait()
                self.chat(context, common, history, output)
                history.append(output)
                continue
            # a tool's result: the call it answers (the corpus's order), else a shell command
            call_id, tool, arguments = calls.pop(0) if calls else (f"call_{step}", "shell", "")
            pacer.wait()
            self.tool(context, common, call_id, tool, arguments, content)
            history.append(
                {
                    "role": "tool",
                    "parts": [{"type": "tool_call_response", "id": call_id, "response": content}],
                }
            )
        pacer.wait()
        root.end()
        self.ended += 1

    def chat(
        self,
        context: Any,
        common: dict[str, Any],
        history: list[dict[str, Any]],
        output: dict[str, Any],
    ) -> None:
        size = self.size()
        if size is not None:
            out_text = json.dumps(output)
            if len(out_text) > size // 3:
                output = text("assistant", out_text[: size // 3])
            messages = fitted(history, size - min(len(out_text), size // 3))
        else:
            messages = history
        span = self.tracer.start_span("chat bench-model", context=context)
        span.set_attributes(
            {
                **common,
                "gen_ai.operation.name": "chat",
                "gen_ai.request.model": "bench-model",
                "gen_ai.input.messages": json.dumps(messages),
                "gen_ai.output.messages": json.dumps([output]),
            }
        )
        span.end()
        self.ended += 1

    def tool(
        self,
        context: Any,
        common: dict[str, Any],
        call_id: str,
        tool: str,
        arguments: str,
        result: str,
    ) -> None:
        size = self.size()
        if size is not None:
            result = result[: max(size - len(arguments), 256)]
        span = self.tracer.start_span(f"execute_tool {tool}", context=context)
        span.set_attributes(
            {
                **common,
                "gen_ai.operation.name": "execute_tool",
                "gen_ai.tool.name": tool,
                "gen_ai.tool.call.id": call_id,
                "gen_ai.tool.call.arguments": arguments,
                "gen_ai.tool.call.result": result,
            }
        )
        span.end()
        self.ended += 1
