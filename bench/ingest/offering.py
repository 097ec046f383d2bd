"""A process of simulated agents (bench/ingest/agents.py) offering spans: its agents run for
the offer's seconds, then flushed (`offer`), in a process of its own (`offer_in_process`), so
that the client's work never holds the probes' event loop nor another process's GIL."""

from __future__ import annotations

import itertools
import multiprocessing
import os
import random
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from multiprocessing.context import SpawnProcess
from multiprocessing.queues import Queue
from typing import Any

from bench.ingest.agents import Agent, Offer, Pacer, Replay
from bench.ingest.exports import Export


@dataclass
class Offered:
    """What a process of agents did: the spans it ended, and its exports."""

    spans_ended: int
    behind_s: float  # how far the pacing was behind its schedule at the end
    exports: list[Export]
    cpu_s: float = 0.0  # CPU seconds the agents' process used (its threads together)
    started: float = 0.0  # time.monotonic() when its agents began (its process spawned)


def schedule_delay_s() -> float:
    """How often an agent's BatchSpanProcessor exports (OTEL_BSP_SCHEDULE_DELAY, the SDK's
    default 5 s)."""
    return float(os.environ.get("OTEL_BSP_SCHEDULE_DELAY", "5000")) / 1000


def start_offsets(agents: int, aligned: bool = False) -> list[float]:
    """When each agent starts, in seconds from the first: spread over one schedule delay, so
    that their batch processors export one after another as independent agents' do, not all
    at once (a processor's timer runs from its start); `aligned`: all at once."""
    return [0.0 if aligned else n * schedule_delay_s() / agents for n in range(agents)]


def offer(offer: Offer, acked: Callable[[str, float], None] | None = None) -> Offered:
    """Run the agents for `offer.seconds`, then flush them; what they did."""
    cpu_started = time.process_time()
    exports: list[Export] = []
    noted = acked or (lambda _c, _t: None)
    agents: list[Agent] = []
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
    threads: list[threading.Thread] = []
    for number, offset in enumerate(start_offsets(offer.agents, offer.aligned)):
        time.sleep(max(0.0, started + offset - time.monotonic()))
        agent = Agent(number, offer, exports, noted)
        agents.append(agent)
        threads.append(
            threading.Thread(target=agent.session, args=(replays(), pacer, until), daemon=True)
        )
        threads[-1].start()
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
    threading.Thread(target=_ended_with_parent, daemon=True).start()
    first: set[str] = set()

    def acked(conversation: str, at: float) -> None:
        if acks is not None and conversation not in first:
            first.add(conversation)
            acks.put((conversation, at))

    out.put(offer(offer_, acked if acks is not None else None))


def _ended_with_parent() -> None:
    """End this process of agents once the bench that spawned it is gone (killed, not
    interrupted from a terminal): its agents would go on offering spans to a server no
    longer there, and take CPU from the next run."""
    parent = multiprocessing.parent_process()
    if parent is not None:
        parent.join()
        os._exit(1)


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
