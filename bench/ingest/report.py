"""A run's result file: its figures written out as rows, held to the targets."""

from __future__ import annotations

import argparse
import math
import os
import subprocess
from collections.abc import Callable, Sequence

import numpy as np

from bench.common.timing import p50, pct
from bench.ingest.agents import VARIED_SHARE
from bench.ingest.figures import (
    by_minute,
    counted,
    dense,
    found,
    rank,
    seconds_of,
    slope_of,
    trio,
    verdict,
)
from bench.ingest.probes import POLL_FAST_S, POLL_LATE_S, POLL_S, Fresh
from bench.ingest.runs import Run, Stream
from bench.ingest.steps import HOLD_P95_S, HOLD_SHARE, answers, refusals

# the targets the run is held to
ACK_P95_MS = 50.0
FRESH_P95_S = 2.0
OTHER_RATIO = 2.0
SUSTAINED = 2000
RSS_SLOPE = 0.02  # "flat": over the second half, growing less than 2% of the start a minute


def commit() -> str:
    """The checkout's commit (other work may have changed its files since)."""
    try:
        head = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, check=True
        ).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "an unknown commit"
    return f"commit {head}"


def own_line(s: Stream) -> str:
    """The stream account's own similarSessions, idle and streaming: its own index's tail
    (the rows written since its last merge) is looked up exactly beside the index."""
    idle, during, refused = s.own
    if not idle or not during:
        return "| the stream account's own similarSessions | not asked |"
    return (
        f"| the stream account's own similarSessions (its index's tail looked up exactly) "
        f"p50 / p95, idle; streaming | {p50(idle):.0f} / {pct(idle, 95):.0f}; "
        f"{p50(during):.0f} / {pct(during, 95):.0f} ms; refused {refused} |"
    )


def rss_row(
    name: str, samples: list[tuple[float, float]], s: Stream, start: float, end: float
) -> str:
    if not samples:
        return f"| {name} | - | - | - | - | - |"
    peak = max(mb for _, mb in samples)
    slope = slope_of(samples)
    return (
        f"| {name} | {start:.0f} | {peak:.0f} | {end:.0f} ({(end - start) / start:+.0%}) "
        f"| {slope:+.1f} MB/min | {by_minute(samples, s.started, s.ended)} |"
    )


def slowest(s: Stream) -> str:
    """The slowest sessions to be found, each with the refit of the stream account's lexical
    model nearest its acknowledgement (up to when it was found)."""
    ranked = sorted(s.fresh, key=lambda f: -(f.found if f.found is not None else math.inf))[:5]
    told = []
    for f in ranked:
        before = [f.acked - t for t in s.refits if t <= f.acked + (f.found or 60)]
        near = min(before, key=abs) if before else None
        since = (
            "no refit near it"
            if near is None
            else f"the nearest refit {abs(near):.0f} s {'before' if near >= 0 else 'after'} its ack"
        )
        took = f"{f.found:.1f} s" if f.found is not None else "not within 60 s"
        told.append(f"{f.corpus} {took} ({since})")
    return "The slowest to be found: " + "; ".join(told) + "." if told else ""


def thirds_line(s: Stream, measure: Callable[[Sequence[Fresh]], list[float]] = counted) -> str:
    """A freshness p95 (the passage counted, or found by the twin) of the sessions first
    acknowledged in each third of the stream: a figure that worsens as the stream goes on is
    work growing with the account (a refit's re-embedding falls in one third)."""
    third = (s.ended - s.started) / 3
    cells = []
    for n in range(3):
        begun = s.started + n * third
        part = [f for f in s.fresh if begun <= f.acked < begun + third]
        cells.append(f"{seconds_of(measure(part), 95)} ({len(part)})")
    return (
        f"| ... p95 in each third of the stream ({third:.0f} s each; sessions watched) | "
        f"{' / '.join(cells)} |"
    )


def report(run: Run, command: str, args: argparse.Namespace) -> str:
    s = run.stream
    lines = [
        *_head(run, command, args),
        *_stream_rows(s, args),
        *_found_rows(s, run.world.dense),
        *_beside_rows(s, args),
        *_serve_alone(run, args),
        *_targets(run, args),
    ]
    return "\n".join(lines)


def _head(run: Run, command: str, args: argparse.Namespace) -> list[str]:
    s, w = run.stream, run.world
    return [
        "# Live ingest: agents sending GenAI spans while another account reads",
        "",
        f"`{command}` (at {commit()})",
        "",
        f"Machine: {os.cpu_count()} cores, shared with other work; load average (1, 5, 15 min) "
        f"at the start {trio(run.load_start)}, before the stream {trio(s.load_before)}, at "
        f"the stream's end {trio(s.load_during)}, at the end {trio(run.load_end)}.",
        "",
        f"Database prepared in {w.prepared_s:.0f} s: the other account (the demo's 200 "
        "tau-bench sessions, `load_demo`), the stream account's history "
        + ", ".join(f"{n} {c}" for c, n in w.history.items())
        + f" sessions (imported, indexed; lexical model{', MiniLM beside it' if w.dense else ''}); "
        f"{len(w.replays)} held-out sessions replayed (a twin of each, same task, in the history).",
        "",
        f"## Stream: {args.rate:g} spans/s offered for {args.soak_seconds:g} s",
        "",
        "`similar-sessions serve` with its defaults (one worker, `index --watch` beside it, the "
        f"default ingest rates); {args.agents} simulated agents in one process (a TracerProvider, "
        "BatchSpanProcessor with the SDK's defaults and OTLPSpanExporter, protobuf gzipped, each), "
        "replaying the held-out sessions of both corpora one after another"
        + (
            ", each verbatim (`--identical-replays`)"
            if args.identical_replays
            else f", each replay with {VARIED_SHARE:.0%} of its words dropped at random (another "
            "run of the same task: no two sessions of the stream are the same text)"
        )
        + "; a chat span carries the conversation so far; "
        + (
            "the agents started at once, their batch processors exporting together "
            "(`--aligned-agents`)."
            if args.aligned_agents
            else "the agents' starts spread over the batch processor's 5 s delay, so that they "
            "export one after another as independent agents do."
        ),
        "",
    ]


def _stream_rows(s: Stream, args: argparse.Namespace) -> list[str]:
    """The stream's table: what was sent and acknowledged, and when a passage was counted."""
    exports = s.exports
    counts = answers(exports)
    too_many, server, other = refusals(counts)
    acked_rate = s.acked / s.seconds
    spans = [e.spans for e in exports]
    kb = [e.body_bytes / 1024 for e in exports]
    watched = len(s.fresh)
    not_found = s.not_found
    told = ", ".join(f"{n} x {code or 'no answer'}" for code, n in sorted(counts.items()))
    ended = s.offered.spans_ended
    return [
        "| figure | value |",
        "|---|---|",
        f"| spans ended by the agents | {ended:,} ({ended / args.soak_seconds:.0f}/s; "
        f"pacing behind by {s.offered.behind_s:.2f} s at the end) |",
        f"| acknowledged spans/s | {acked_rate:.0f} ({s.acked:,} spans in {s.seconds:.0f} s, "
        "the final flush included) |",
        f"| acknowledgement (one `export()`: one POST) p50 / p95 / max | {s.ack_ms(50):.0f} / "
        f"{s.ack_ms(95):.0f} / {s.ack_ms(100):.0f} ms |",
        f"| ... of it the HTTP exchange (requests' `elapsed`: the request sent to the answer's "
        f"headers) p50 / p95 / max | {s.posted_ms(50):.0f} / {s.posted_ms(95):.0f} / "
        f"{s.posted_ms(100):.0f} ms; the rest is the exporter encoding and gzipping the batch |",
        f"| ... of it the server's handling (its histogram of `POST /v1/traces` answered 200, "
        f"from the request's arrival at the app to its answer; to the bucket) p50 / p95 | "
        f"<= {s.handled[0] * 1000:.0f} / <= {s.handled[1] * 1000:.0f} ms |",
        f"| ... of it the wait for a seat in the account's fair queue (its histogram, to the "
        f"bucket) p50 / p95 | <= {s.waited[0] * 1000:.0f} / <= {s.waited[1] * 1000:.0f} ms |",
        f"| POSTs; spans per POST p50 / mean / max | {len(exports)}; "
        f"{p50([float(x) for x in spans]):.0f} / "
        f"{np.mean(spans) if spans else math.nan:.0f} / {max(spans, default=0)} |",
        f"| gzipped KB per POST p50 / p95 / max | {p50(kb):.0f} / {pct(kb, 95):.0f} / "
        f"{max(kb, default=0):.0f} |",
        f"| answers | {told} "
        f"(429: {too_many}, 5xx: {server}, other: {other}); exports failed "
        f"{sum(1 for e in exports if not e.ok)} |",
        f"| sessions watched from their first acknowledgement | {watched} "
        f"({not_found} not listed by their twin within 60 s; {s.deeper} found past the first page "
        "of 20 of the twin's list); watched up to 4 at a time, a new one every 2 s, polled every "
        f"{POLL_S:g} s, past {POLL_FAST_S:g} s every {POLL_LATE_S:g} s ({s.asked} similarSessions "
        "asked) |",
        f"| lexical: passage counted (`embeddedChunks` >= 1) p50 / p95 | "
        f"{seconds_of(counted(s.fresh), 50)} / {seconds_of(counted(s.fresh), 95)} |",
        thirds_line(s),
        f"| lexical: found in the twin's similarSessions p50 / p95 (nearest rank; a session not "
        "found within 60 s ranks last) | "
        f"{seconds_of(found(s.fresh), 50)} / {seconds_of(found(s.fresh), 95)} |",
        thirds_line(s, found),
    ]


def _found_rows(s: Stream, with_dense: bool) -> list[str]:
    """The table's rows on being found by the twin, by corpus, and on the dense leg."""
    lines: list[str] = []
    watched = len(s.fresh)
    within = [x for x in found(s.fresh) if not math.isinf(x)]
    lines.append(
        f"| ... of those found within 60 s ({len(within)}) p50 / p95 | "
        f"{seconds_of(within, 50)} / {seconds_of(within, 95)} |"
    )
    for corpus in ("tau-bench", "coding-agents"):
        f = found(s.fresh, corpus)
        lines.append(
            f"| ... {corpus} ({sum(1 for x in f if not math.isinf(x))} of {len(f)} found) "
            f"p50 / p95 | {seconds_of(f, 50)} / "
            f"{seconds_of(f, 95)} |"
        )
    if with_dense:
        d = dense(s.fresh)
        lines.append(
            f"| dense (MiniLM): a passage embedded p50 / p95 | {seconds_of(d, 50)} / "
            f"{seconds_of(d, 95)} ({len(d)} of {watched} within 60 s) |"
        )
    else:
        lines.append(
            "| dense leg | skipped (no `--dense`: MiniLM on 2 shared cores is slow; the "
            "lexical leg never waits for it) |"
        )
    return lines


def _beside_rows(s: Stream, args: argparse.Namespace) -> list[str]:
    """The table's rows on what went on beside the stream (refits, the other account's reads,
    the stream account's own, CPU), the slowest sessions, and memory."""
    idle50, during50 = p50(s.idle), p50(s.during)
    idle95, during95 = pct(s.idle, 95), pct(s.during, 95)
    cpu_serve, cpu_indexer, cpu_pg = s.cpu
    serve_end, indexer_end = s.rss_end
    serve_start, indexer_start = s.rss_start
    during_stream = [b for b in s.backlog if s.started <= b[0] <= s.ended]
    waiting = [n for _, _, n in during_stream]
    refit_at = ", ".join(f"{t - s.started:.0f}" for t in s.refits if t >= s.started)
    return [
        f"| the stream account's lexical refits during the stream (a new fit swapped in, every "
        f"passage of the account embedded again under it) | "
        f"{len([t for t in s.refits if t >= s.started])}"
        f"{f' (at {refit_at} s)' if refit_at else ''} |",
        f"| its passages waiting (under its fit, or one staged), sampled every 2 s: p50 / max | "
        f"{p50([float(n) for n in waiting]):,.0f} / {max(waiting, default=0):,} |",
        f"| the other account's similarSessions p50 idle / streaming | {idle50:.0f} / "
        f"{during50:.0f} ms ({during50 / idle50:.2f}x) |",
        f"| ... p95 idle / streaming | {idle95:.0f} / {during95:.0f} ms "
        f"({during95 / idle95:.2f}x); refused {s.refused} |",
        own_line(s),
        f"| CPU during the stream: server / indexer / PostgreSQL | {cpu_serve:.0f} / "
        f"{cpu_indexer:.0f} / {cpu_pg:.0f} s ({cpu_serve / s.seconds:.0%} / "
        f"{cpu_indexer / s.seconds:.0%} / {cpu_pg / s.seconds:.0%} of a core; "
        f"server {1000 * cpu_serve / max(s.acked, 1):.2f} ms a span); the agents' process "
        f"{s.offered.cpu_s:.0f} s ({s.offered.cpu_s / s.seconds:.0%}) |",
        "",
        slowest(s),
        "",
        "Resident memory, MB (sampled each second; start: before the stream, end: "
        f"{args.settle:g} s after it; slope over the second half of the samples; the median "
        f"of each minute of the stream, its refits at {refit_at or 'none'} s):",
        "",
        "| process | start | peak | end | slope | each minute of the stream |",
        "|---|---|---|---|---|---|",
        rss_row("serve", s.serve_samples, s, serve_start, serve_end),
        rss_row("its indexer (index --watch)", s.indexer_samples, s, indexer_start, indexer_end),
        "",
    ]


def _serve_alone(run: Run, args: argparse.Namespace) -> list[str]:
    if not run.steps:
        return []
    highest = run.highest

    return [
        "## Serve alone: the highest sustained rate",
        "",
        "The server again with SIMILAR_SESSIONS_SERVE_INDEXES=false, "
        "SIMILAR_SESSIONS_INGEST_SPAN_RATE=off and SIMILAR_SESSIONS_INGEST_BYTE_RATE=off "
        f"(the ingest rates lifted); {STEP_PROCESSES_TEXT} offering spans of 1-8 KB for "
        f"{args.step_seconds:g} s a step, then flushing. 'acknowledged /s': the spans "
        f"acknowledged by {HOLD_P95_S:g} s after the offering ended, over the offering's "
        "time; "
        "'acknowledged': the spans acknowledged of those the agents ended. A step holds "
        f"when its acknowledged rate is >= {HOLD_SHARE:.0%} of the offered rate, ack p95 < "
        f"{HOLD_P95_S:g} s, no 429 and no 5xx. Server RSS "
        f"{run.alone_rss[0]:.0f} MB at its start, peak {run.alone_rss[1]:.0f} MB.",
        "",
        "| offered spans/s | agents ended /s | acknowledged /s | acknowledged "
        "| ack p50 / p95 ms (p95 of the HTTP exchange; of the server's handling) | POSTs "
        "| spans/POST | KB/POST (gzip) | 429 / 5xx / other | failed "
        "| CPU server / PostgreSQL / agents (of one core) "
        "| load 1 min "
        "| holds |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|",
        *[st.line() for st in run.steps],
        "",
        f"Highest step that holds: **{highest:,} spans/s**"
        + ("" if len(run.steps) == len(args.steps) else " (the steps above it not run)")
        + ".",
        "",
    ]


def _targets(run: Run, args: argparse.Namespace) -> list[str]:
    s = run.stream
    watched = len(s.fresh)
    not_found = s.not_found
    idle50, during50 = p50(s.idle), p50(s.during)
    highest = run.highest
    serve_end, indexer_end = s.rss_end
    serve_start, indexer_start = s.rss_start
    serve_slope, indexer_slope = slope_of(s.serve_samples), slope_of(s.indexer_samples)
    flat = serve_slope <= RSS_SLOPE * serve_start and (
        math.isnan(indexer_slope) or indexer_slope <= RSS_SLOPE * indexer_start
    )
    other_ok = during50 <= OTHER_RATIO * idle50
    got = found(s.fresh)
    fresh_ok = bool(got) and rank(got, 95) <= FRESH_P95_S
    return [
        "## Against the targets",
        "",
        "| target | measured | |",
        "|---|---|---|",
        f"| at 200 spans/s, ack p95 <= {ACK_P95_MS:.0f} ms | {s.ack_ms(95):.0f} ms at "
        f"{args.rate:g} (the server's handling <= {s.handled[1] * 1000:.0f} ms) | "
        f"{verdict(s.ack_ms(95) <= ACK_P95_MS)} |",
        f"| lexical freshness p95 <= {FRESH_P95_S:g} s (found by the twin) | "
        f"{seconds_of(found(s.fresh), 95)} ({not_found} of {watched} not found) | "
        f"{verdict(fresh_ok)} |",
        f"| the other account's p50 within {OTHER_RATIO:g}x idle | {during50 / idle50:.2f}x | "
        f"{verdict(other_ok)} |",
        f"| highest sustained >= {SUSTAINED:,} spans/s (serve alone) | "
        + (
            f"{highest:,} spans/s | {verdict(highest >= SUSTAINED)} |"
            if run.steps
            else "not run | - |"
        ),
        f"| RSS flat (over the stream's second half, growing < {RSS_SLOPE:.0%} of the start a "
        f"minute) | serve {serve_slope:+.1f} MB/min ({serve_start:.0f} -> {serve_end:.0f} MB), "
        f"indexer {indexer_slope:+.1f} MB/min ({indexer_start:.0f} -> {indexer_end:.0f} MB) "
        f"| {verdict(flat)} |",
        "",
    ]


STEP_PROCESSES_TEXT = (
    "processes of simulated agents, one per 250 spans/s (two at least; in each, one agent per "
    "50 spans/s of its share, two at least: every agent's batches alike, about 250 spans a "
    "POST)"
)
