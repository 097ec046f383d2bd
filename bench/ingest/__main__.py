"""Live ingest under load (issue 55): agents sending GenAI spans over OTLP/HTTP while another
account reads.

    python -m bench.ingest [--rate 200] [--soak-seconds 240] [--idle-seconds 30]
                           [--steps 200,500,1000,2000,3000,4000] [--step-seconds 20]
                           [--agents 8] [--dense] [--identical-replays] [--aligned-agents]
                           [--out FILE]

A fresh database (ss_bench_ingest, on the server the CLI uses) holds two accounts
(bench/ingest/world.py): "other", the demo's 200 tau-bench sessions as `load_demo` loads them,
and "stream" (the lexical model, as the demo's), imported with a key to read and a key to
ingest, holding both corpora as history but the sessions it replays (one of each task),
indexed. Each replayed session has a twin in the history: a session of the same task.

1. Stream: `similar-sessions serve` of this checkout (its defaults: one worker, `index --watch`
   beside it, the default ingest rates). The other account's similarSessions is asked every
   0.5 s for `--idle-seconds`, then again while a process of `--agents` simulated agents
   (bench/ingest/agents.py: the OpenTelemetry SDK as an agent uses it; their starts spread
   over the batch processor's 5 s delay, `--aligned-agents` at once) replays the held-out
   sessions at `--rate` spans a second for `--soak-seconds`. Meanwhile replayed sessions
   (a new one every 2 s, up to 4 at a time) are watched from their first acknowledgement
   until a passage is counted (`embeddedChunks`) and the twin's similarSessions lists them
   (`--dense`: until the dense model has embedded a passage); the server's and the
   indexer's RSS are sampled every second, the stream account's model and passages waiting
   every 2 s.
2. Serve alone: the server again with SIMILAR_SESSIONS_SERVE_INDEXES=false and the ingest
   rates lifted (SIMILAR_SESSIONS_INGEST_SPAN_RATE=off, SIMILAR_SESSIONS_INGEST_BYTE_RATE=off);
   processes of agents (one per 250 spans/s, two at least; in each, one agent per 50 spans/s)
   offer spans of 1-8 KB at each step's rate
   for `--step-seconds`,
   up the steps until one does not hold: acknowledged >= 95% of the offered rate, the
   acknowledgement p95 under 1 s, no 429 and no 5xx.

Writes bench/results/ingest-both.md (unless `--out`). Loopback only; bounded: about 10
minutes with the defaults (`--soak-seconds 600` for a 10-minute soak)."""

from __future__ import annotations

import argparse
import asyncio
import math
import os
import shlex
import subprocess
import sys
import time
from pathlib import Path

import httpx

from bench.common.paths import result
from bench.common.serving import serve
from bench.ingest.agents import VARIED_SHARE, Offer
from bench.ingest.offering import Offered, offer_in_process
from bench.ingest.probes import (
    WAITED,
    Asker,
    Backlog,
    Freshness,
    Memory,
    handled_in,
    handled_within,
    postgres_cpu_seconds,
    scraped,
)
from bench.ingest.report import report
from bench.ingest.runs import Run, Stream
from bench.ingest.steps import Step, step_of
from bench.ingest.world import (
    INGEST_KEY,
    OTHER_KEY,
    OTHER_SESSION,
    OWN_KEY,
    VIEW_KEY,
    World,
    prepare,
)
from config.logs import configure_logging
from config.settings import Settings

SERVER_LOG = Path("/tmp/bench-ingest-server.log")
ALONE = {
    "SIMILAR_SESSIONS_SERVE_INDEXES": "false",
    "SIMILAR_SESSIONS_INGEST_SPAN_RATE": "off",
    "SIMILAR_SESSIONS_INGEST_BYTE_RATE": "off",
}
# the stream account's own similarSessions (of a session of its history) asked this often
# while it streams: its own index's tail, growing between merges, is looked up exactly
OWN_EVERY_S = 2.0
STEP_AGENT_RATE = 50  # spans a second one simulated agent of a step sends at most
# spans a second one process of agents offers at most: a process's agents share its GIL, and
# one whose threads wait for it acknowledges late, however soon the server answered
STEP_PROCESS_RATE = 250


def load() -> tuple[float, float, float]:
    return os.getloadavg()


def stopped(proc: subprocess.Popen[bytes]) -> None:
    proc.terminate()
    try:
        proc.wait(timeout=30)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


async def stream_phase(base: str, memory: Memory, world: World, args: argparse.Namespace) -> Stream:
    other = httpx.AsyncClient(
        base_url=base, headers={"authorization": f"Bearer {OTHER_KEY}"}, timeout=60
    )
    viewer = httpx.AsyncClient(
        base_url=base, headers={"authorization": f"Bearer {VIEW_KEY}"}, timeout=60
    )
    reader = httpx.AsyncClient(
        base_url=base, headers={"authorization": f"Bearer {OWN_KEY}"}, timeout=60
    )
    stop = asyncio.Event()
    watcher = asyncio.create_task(memory.watch(stop))
    backlog = Backlog(world.url)
    watching = asyncio.create_task(backlog.watch(stop))
    try:
        asker = Asker(other, OTHER_SESSION)
        own = Asker(reader, world.own_session, every=OWN_EVERY_S)
        await asyncio.gather(asker.until(3.0), own.until(3.0))  # warm
        asker.refused = own.refused = 0
        asker.why, own.why = {}, {}
        load_before = load()
        idle, own_idle = await asyncio.gather(
            asker.until(float(args.idle_seconds)), own.until(float(args.idle_seconds))
        )
        memory.sample()
        rss_start = (memory.serve[-1][1], memory.indexer[-1][1] if memory.indexer else math.nan)
        cpu_before = (*memory.cpu_seconds(), postgres_cpu_seconds(args.data_dir))
        before = await scraped(other)
        handled_before, waited_before = handled_in(before), handled_in(before, WAITED)
        offer = Offer(
            base + "/v1/traces",
            INGEST_KEY,
            args.rate,
            args.soak_seconds,
            args.agents,
            world.replays,
            f"stream{int(time.time())}",
            varied=0.0 if args.identical_replays else VARIED_SHARE,
            aligned=args.aligned_agents,
        )
        started = time.monotonic()
        running = offer_in_process(offer, with_acks=True)
        fresh = Freshness(viewer, world, running.acks)
        done = asyncio.Event()
        prober = asyncio.create_task(fresh.run(done))
        asking = asyncio.create_task(asker.until(done))
        own_asking = asyncio.create_task(own.until(done))
        offered: Offered = await asyncio.to_thread(running.result, args.soak_seconds + 600)
        ended = time.monotonic()
        load_during = load()
        done.set()
        during, own_during = await asking, await own_asking
        await prober
        cpu_after = (*memory.cpu_seconds(), postgres_cpu_seconds(args.data_dir))
        after = await scraped(other)
        handled_after, waited_after = handled_in(after), handled_in(after, WAITED)
        await asyncio.sleep(args.settle)
        memory.sample()
        rss_end = (memory.serve[-1][1], memory.indexer[-1][1] if memory.indexer else math.nan)
    finally:
        stop.set()
        await watcher
        await watching
        await other.aclose()
        await viewer.aclose()
        await reader.aclose()
    return Stream(
        offered=offered,
        seconds=ended - started,
        idle=idle,
        during=during,
        refused=asker.refusals(),
        own=(own_idle, own_during, own.refusals()),
        fresh=fresh.samples,
        deeper=fresh.deeper,
        asked=fresh.asked,
        rss_start=rss_start,
        rss_end=rss_end,
        serve_samples=list(memory.serve),
        indexer_samples=list(memory.indexer),
        cpu=tuple(b - a for a, b in zip(cpu_before, cpu_after, strict=True)),
        load_before=load_before,
        load_during=load_during,
        started=started,
        ended=ended,
        backlog=backlog.samples,
        refits=backlog.refits(),
        handled=(
            handled_within(handled_before, handled_after, 50),
            handled_within(handled_before, handled_after, 95),
        ),
        waited=(
            handled_within(waited_before, waited_after, 50),
            handled_within(waited_before, waited_after, 95),
        ),
    )


def step_phase(base: str, world: World, memory: Memory, args: argparse.Namespace) -> list[Step]:
    steps: list[Step] = []
    for rate in args.steps:
        processes = max(2, math.ceil(rate / STEP_PROCESS_RATE))
        per_process = rate / processes
        agents = max(2, math.ceil(per_process / STEP_AGENT_RATE))
        offers = [
            Offer(
                base + "/v1/traces",
                INGEST_KEY,
                per_process,
                args.step_seconds,
                agents,
                world.replays,
                f"step{rate}-{n}-{int(time.time())}",
                sized=True,
                seed=n + 1,
                aligned=args.aligned_agents,
            )
            for n in range(processes)
        ]
        memory.sample()
        cpu_before = memory.cpu_seconds()[0], postgres_cpu_seconds(args.data_dir)
        handled_before = handled_in(httpx.get(base + "/metrics").text)
        started = time.monotonic()
        running = [offer_in_process(o) for o in offers]
        results = [r.result(args.step_seconds + 600) for r in running]
        handled_after = handled_in(httpx.get(base + "/metrics").text)
        cpu = (
            memory.cpu_seconds()[0] - cpu_before[0],
            postgres_cpu_seconds(args.data_dir) - cpu_before[1],
        )
        memory.sample()
        server_p95 = handled_within(handled_before, handled_after, 95)
        step = step_of(rate, started, args.step_seconds, results, cpu, load(), server_p95)
        steps.append(step)
        print(step.line(), file=sys.stderr, flush=True)
        if not step.held and not args.all_steps:
            break
        time.sleep(args.settle)
    return steps


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m bench.ingest",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--rate", type=float, default=200, help="spans/s of the stream")
    parser.add_argument("--soak-seconds", type=float, default=240, help="the stream's length")
    parser.add_argument("--idle-seconds", type=float, default=30)
    parser.add_argument("--agents", type=int, default=8, help="simulated agents of the stream")
    parser.add_argument(
        "--steps",
        type=lambda s: [int(x) for x in s.split(",") if x],
        default=[200, 500, 1000, 2000, 3000, 4000],
        help="offered spans/s of serve alone ('' to skip)",
    )
    parser.add_argument("--step-seconds", type=float, default=20)
    parser.add_argument("--all-steps", action="store_true", help="go on past a step that fails")
    parser.add_argument("--settle", type=float, default=5)
    parser.add_argument(
        "--dense", action="store_true", help="the stream account has MiniLM too (slow)"
    )
    parser.add_argument(
        "--identical-replays",
        action="store_true",
        help="the stream replays each session verbatim (by default each replay drops a tenth of "
        "its words at random, as no two runs of a task are the same text)",
    )
    parser.add_argument(
        "--aligned-agents",
        action="store_true",
        help="start a process's agents at once, so that their batch processors export together "
        "every 5 s (by default their starts are spread over the 5 s, as independent agents "
        "export one after another)",
    )
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args(argv)
    configure_logging("WARNING")
    settings = Settings.from_env()
    args.data_dir = str(settings.data_dir)
    command = "python -m bench.ingest" + (
        " " + shlex.join(argv if argv is not None else sys.argv[1:])
        if (argv or sys.argv[1:])
        else ""
    )
    load_start = load()
    print(f"preparing the database (load average {load_start})", file=sys.stderr, flush=True)
    world = asyncio.run(prepare(settings, args.dense))
    print(
        f"prepared in {world.prepared_s:.0f} s: history {world.history}, "
        f"{len(world.replays)} sessions to replay",
        file=sys.stderr,
        flush=True,
    )
    proc, base = serve(world.url, {}, SERVER_LOG)
    try:
        time.sleep(3)  # the indexer beside it starts
        memory = Memory(proc.pid)
        stream = asyncio.run(stream_phase(base, memory, world, args))
    finally:
        stopped(proc)
    print(stream.line(), file=sys.stderr, flush=True)
    steps: list[Step] = []
    alone_rss = (math.nan, math.nan)
    if args.steps:
        proc, base = serve(world.url, ALONE, SERVER_LOG.with_suffix(".alone.log"))
        try:
            alone = Memory(proc.pid)
            alone.sample()
            steps = step_phase(base, world, alone, args)
            alone_rss = (alone.serve[0][1], max(mb for _, mb in alone.serve))
        finally:
            stopped(proc)
    run = Run(world, stream, steps, alone_rss, load_start, load())
    text = report(run, command, args)
    print(text)
    out = args.out or result("ingest", "both")
    out.write_text(text, encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
