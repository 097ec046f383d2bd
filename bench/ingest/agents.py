"""Simulated agents: corpus sessions replayed as GenAI spans through the OpenTelemetry SDK, as
an instrumented agent sends them (examples/otel_agent.py): a TracerProvider per agent, a
BatchSpanProcessor (the SDK's defaults) and the OTLP/HTTP protobuf exporter, gzipped, with the
ingest key's `Authorization` header. Each agent replays one session after another under a new
`gen_ai.conversation.id`, paced so that all agents of a process together end `rate` spans a
second (compressed time: a session of 20 turns ends in a fraction of a second).

The exporter is wrapped (`TimedExporter`): each `export()` call, one POST and the exporter's
own retries, is timed and its outcome, spans, body bytes and answers kept (`Export`). A
process of agents runs in a process of its own (`offer_in_process`), so that the client's
work never holds the probes' event loop."""

from __future__ import annotations

import itertools
import json
import multiprocessing
import random
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from multiprocessing.context import SpawnProcess
from multiprocessing.queues import Queue
from typing import Any

import requests
from opentelemetry import trace
from opentelemetry.exporter.otlp.proto.http import Compression
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SpanExportResult
from opentelemetry.trace import Tracer

CONVERSATION = "gen_ai.conversation.id"


@dataclass(frozen=True, slots=True)
class Replay:
    """A corpus session to replay: its turns as (role, kind, content)."""

    corpus: str
    name: str
    task: str
    turns: tuple[tuple[str, str, str], ...]


@dataclass(frozen=True, slots=True)
class Export:
    """One `export()` call: a POST (and the exporter's retries of it)."""

    started: float  # time.monotonic(): one clock for every process of the machine
    seconds: float
    ok: bool
    spans: int
    body_bytes: int  # the gzipped body of its last attempt
    answers: tuple[int, ...]  # each attempt's status (0: no answer)
    posted: float  # seconds from sending its attempts to their answers (requests' `elapsed`)


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


@dataclass
class Offered:
    """What a process of agents did: the spans it ended, and its exports."""

    spans_ended: int
    behind_s: float  # how far the pacing was behind its schedule at the end
    exports: list[Export]
    cpu_s: float = 0.0  # CPU seconds the agents' process used (its threads together)
    started: float = 0.0  # time.monotonic() when its agents began (its process spawned)


class RecordingSession(requests.Session):
    """The exporter's HTTP session, keeping each answer's status and its request's body size
    (a request that got no answer is not kept: its export fails)."""

    def __init__(self) -> None:
        super().__init__()
        self.attempts: list[tuple[int, int, float]] = []
        self.hooks["response"].append(self.heard)

    def heard(self, response: requests.Response, *args: Any, **kwargs: Any) -> None:
        body = response.request.body
        size = len(body) if isinstance(body, bytes | bytearray) else 0
        elapsed = response.elapsed.total_seconds()  # sending the request to its answer's headers
        self.attempts.append((int(response.status_code), size, elapsed))


class TimedExporter(OTLPSpanExporter):
    """OTLPSpanExporter, each `export()` timed and kept; `acked` hears of each conversation
    whose spans an export carried, with the time it was acknowledged."""

    def __init__(
        self,
        endpoint: str,
        key: str,
        sink: list[Export],
        acked: Callable[[str, float], None] | None,
    ) -> None:
        self.recording = RecordingSession()
        super().__init__(
            endpoint=endpoint,
            headers={"Authorization": f"Bearer {key}"},
            compression=Compression.Gzip,
            session=self.recording,
        )
        self.sink = sink
        self.acked = acked
        self.lock = threading.Lock()

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        seen = len(self.recording.attempts)
        started = time.monotonic()
        result = super().export(spans)
        ended = time.monotonic()
        attempts = self.recording.attempts[seen:]
        ok = result is SpanExportResult.SUCCESS
        with self.lock:
            self.sink.append(
                Export(
                    started,
                    ended - started,
                    ok,
                    len(spans),
                    attempts[-1][1] if attempts else 0,
                    tuple(a for a, _, _ in attempts),
                    sum(e for _, _, e in attempts),
                )
            )
        if ok and self.acked is not None:
            for conversation in {str((s.attributes or {}).get(CONVERSATION, "")) for s in spans}:
                self.acked(conversation, ended)
        return result


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
        self.exporter = TimedExporter(offer.endpoint, offer.key, sink, acked)
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


def offer(offer: Offer, acked: Callable[[str, float], None] | None = None) -> Offered:
    """Run the agents for `offer.seconds`, then flush them; what they did."""
    cpu_started = time.process_time()
    exports: list[Export] = []
    noted = acked or (lambda _c, _t: None)
    agents = [Agent(n, offer, exports, noted) for n in range(offer.agents)]
    rng = random.Random(offer.seed)
    order = list(offer.replays)
    rng.shuffle(order)
    lock = threading.Lock()
    cycle = itertools.cycle(order)

    def replays() -> Iterator[Replay]:
        while True:
            with lock:
                item = next(cycle)
            yield item

    pacer = Pacer(offer.rate)
    started = time.monotonic()
    until = started + offer.seconds
    threads = [
        threading.Thread(target=a.session, args=(replays(), pacer, until), daemon=True)
        for a in agents
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    behind = pacer.behind
    for agent in agents:
        agent.provider.force_flush(timeout_millis=60_000)
    for agent in agents:
        agent.provider.shutdown()
    cpu = time.process_time() - cpu_started
    return Offered(sum(a.ended for a in agents), behind, exports, cpu, started)


def _child(offer_: Offer, acks: Queue[Any] | None, out: Queue[Any]) -> None:
    """A process of agents: its offer run, each conversation's first acknowledgement put on
    `acks` as it comes, its figures on `out` at the end."""
    import logging

    logging.getLogger("opentelemetry").setLevel(logging.ERROR)
    first: set[str] = set()

    def acked(conversation: str, at: float) -> None:
        if acks is not None and conversation not in first:
            first.add(conversation)
            acks.put((conversation, at))

    out.put(offer(offer_, acked if acks is not None else None))


@dataclass
class Running:
    """A process of agents started by `offer_in_process`."""

    process: SpawnProcess
    out: Queue[Any]
    acks: Queue[Any] | None = field(default=None)

    def result(self, timeout: float) -> Offered:
        offered: Offered = self.out.get(timeout=timeout)
        self.process.join(timeout=30)
        return offered


def offer_in_process(offer_: Offer, with_acks: bool = False) -> Running:
    """The offer run by a process of its own (spawned: a fresh interpreter)."""
    context = multiprocessing.get_context("spawn")
    out: Queue[Any] = context.Queue()
    acks: Queue[Any] | None = context.Queue() if with_acks else None
    process = context.Process(target=_child, args=(offer_, acks, out), daemon=True)
    process.start()
    return Running(process, out, acks)
