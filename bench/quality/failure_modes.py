"""How well failure modes' groups match tasks on the two labelled corpora.

    python -m bench.quality.failure_modes [--corpus all|tau-bench|coding-agents]
                                          [--model lexical|minilm]

Each corpus gets a fresh database fm_quality_<corpus>: imported as plain activity, its
sessions spread over the last 28 days, indexed with the product's defaults, and grouped by
the product's own use case (resolvers/failure_modes.py) over a 30-day window, every session
of the window compared (the bound raised to hold them all). Marked failed: every session of
both corpora; and, on tau-bench, only the trials of reward 0 (the others completed).

Purity: of all grouped sessions, the share that share their group's majority task. Completeness:
of all sessions, the share in the group holding most of their task's sessions (tasks of the
sessions grouped). Both over sessions, so large groups weigh as many sessions as they hold.
Writes bench/results/failure-modes-quality.md."""

from __future__ import annotations

import argparse
import asyncio
import json
import secrets
import sys
import time
from collections import Counter
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any
from uuid import UUID

from bench.common.databases import recreate
from bench.common.paths import RESULTS
from bench.quality import served
from bench.quality.labelled import CORPORA, Corpus, records
from bench.quality.pipeline import MODELS, registry
from config.logs import configure_logging
from config.settings import Settings
from data.accounts import Principal
from data.engine import make_engine
from data.migrate import migrate
from data.server import resolve_url
from indexer import demo
from resolvers.arguments import FailureArgs
from resolvers.context import Context
from resolvers.cursors import Cursors
from resolvers.failure_members import group_terms
from resolvers.failure_modes import grouping
from resolvers.rules.failure_groups import Group
from resolvers.services import Services
from resolvers.tuning import Tuning
from transfer.importing import import_lines

OUT = RESULTS / "failure-modes-quality.md"
WINDOW_DAYS, SPREAD_DAYS = 30, 28


def failed_trials() -> set[str]:
    """tau-bench's trials of reward 0, by their session name."""
    return {
        f"airline/task-{int(item['task_id'])}/trial-{int(item['trial'])}"
        for item in demo.load_corpus()
        if float(item["reward"]) == 0.0
    }


def timed(corpus: Corpus, model: tuple[str, str, int], failed: set[str] | None) -> Iterator[str]:
    """The corpus's import lines, its sessions spread over the last SPREAD_DAYS days (each
    session's activity moved with it), marked failed (all, or those named in `failed`)."""
    now = datetime.now(UTC)
    names = {str(s.id): s.name for s in corpus.sessions}
    shift: dict[str, timedelta] = {}
    order = {str(s.id): n for n, s in enumerate(corpus.sessions)}
    for line in records(corpus, model):
        if line["type"] == "session":
            started = datetime.fromisoformat(line["started_at"])
            wanted = now - timedelta(days=SPREAD_DAYS * (1 - order[line["id"]] / len(order)))
            shift[line["id"]] = wanted - started
            for key in ("started_at", "last_activity_at"):
                line[key] = (datetime.fromisoformat(line[key]) + shift[line["id"]]).isoformat()
            chosen = failed is None or names[line["id"]] in failed
            line["status"] = "failed" if chosen else "completed"
        elif line["type"] == "activity":
            moved = datetime.fromisoformat(line["occurred_at"]) + shift[line["runtime_session_id"]]
            line["occurred_at"] = moved.isoformat()
        yield json.dumps(line)


def scores(groups: list[Group], task: dict[UUID, str]) -> dict[str, Any]:
    """Purity and completeness of the groups against the tasks, and the groups' shape."""
    members = [[m.session_id for m in g.members] for g in groups]
    grouped = [s for ms in members for s in ms]
    purity = sum(Counter(task[s] for s in ms).most_common(1)[0][1] for ms in members)
    by_task: dict[str, Counter[int]] = {}
    for n, ms in enumerate(members):
        for s in ms:
            by_task.setdefault(task[s], Counter())[n] += 1
    complete = sum(c.most_common(1)[0][1] for c in by_task.values())
    sizes = sorted((len(ms) for ms in members), reverse=True)
    per_task = Counter(task[s] for s in grouped)
    return {
        "sessions": len(grouped),
        "tasks": len(per_task),
        "groups": len(groups),
        "singletons": sum(1 for n in sizes if n == 1),
        "largest": sizes[:5],
        "purity": purity / len(grouped) if grouped else float("nan"),
        "completeness": complete / len(grouped) if grouped else float("nan"),
        # A grouping of one session each: purity 1; completeness this.
        "singleton_completeness": len(per_task) / len(grouped) if grouped else float("nan"),
        "pure_groups": sum(1 for ms in members if len({task[s] for s in ms}) == 1),
    }


async def measure(
    corpus: Corpus, model: str, settings: Settings, failed: set[str] | None
) -> dict[str, Any]:
    """Load, index and group one corpus (failed: the sessions marked failed, None for all)."""
    url = resolve_url(settings.database_url, settings.data_dir)
    name = "fm_quality_" + corpus.name.replace("-", "_")
    engine = make_engine(await recreate(url, name), statement_timeout_ms=600_000)
    try:
        await migrate(engine)
        async with engine.begin() as conn:
            await import_lines(conn, corpus.name, list(timed(corpus, MODELS[model], failed)))
        await served.index(engine, settings, corpus, registry())
        tuning = Tuning.of(settings)
        services = Services(engine, tuning)
        principal = Principal(corpus.account_id, corpus.name, frozenset(), frozenset())
        context = Context.of(services, principal, Cursors(secrets.token_bytes(32)))
        args = FailureArgs(window_days=WINDOW_DAYS, statuses=("failed",))
        started = time.perf_counter()
        found = await grouping(context, args)
        took = time.perf_counter() - started
        chosen, _ = await group_terms(context, found.groups[:10])
        identity = await served.configured(engine, corpus)
    finally:
        await engine.dispose()
    task = {s.id: s.task for s in corpus.sessions}
    out = scores(list(found.groups), task)
    out["identity"] = identity
    out["reasons"] = sorted(found.reasons)
    out["seconds"] = round(took, 1)
    out["terms"] = [list(t) for t in chosen]
    return out


def report(rows: list[dict[str, Any]]) -> str:
    lines = [
        "# Failure modes against tasks",
        "",
        f"`python -m bench.quality.failure_modes {' '.join(sys.argv[1:])}`: each corpus's "
        f"sessions spread over the last {SPREAD_DAYS} days and grouped over a {WINDOW_DAYS}-day "
        "window, every session of the window compared. Purity: the share of grouped sessions "
        "that share their group's majority task. Completeness: the share of sessions in the "
        "group that holds most of their task. A grouping of one session each would have purity "
        "1.000 and the completeness in the last column.",
        "",
        "| corpus | marked failed | model | sessions | tasks | groups | of one | largest | "
        "pure groups | purity | completeness | one each: completeness | seconds |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        lines.append(
            f"| {r['corpus']} | {r['marked']} | `{r['identity']}` | {r['sessions']} | "
            f"{r['tasks']} | {r['groups']} | {r['singletons']} | "
            f"{', '.join(map(str, r['largest']))} | {r['pure_groups']} | {r['purity']:.3f} | "
            f"{r['completeness']:.3f} | {r['singleton_completeness']:.3f} | {r['seconds']} |"
        )
    lines += ["", "The first groups' shared terms (at most 5 each):", ""]
    for r in rows:
        shown = "; ".join(", ".join(t) or "-" for t in r["terms"][:5])
        lines.append(f"- {r['corpus']}, {r['marked']}: {shown}")
    return "\n".join(lines) + "\n"


async def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.quality.failure_modes")
    parser.add_argument("--corpus", choices=["all", *CORPORA], default="all")
    parser.add_argument("--model", choices=list(MODELS), default="lexical")
    opts = parser.parse_args(argv)
    settings = Settings.from_env()
    configure_logging(settings.log_level)
    # Every session of the window compared, and never cut short: a figure, not a latency.
    settings = settings.model_copy(
        update={"comparison_timeout_ms": 600_000, "failure_modes_sessions": 5_000}
    )
    rows = []
    names = list(CORPORA) if opts.corpus == "all" else [opts.corpus]
    for name in names:
        corpus = CORPORA[name]()
        variants: list[tuple[str, set[str] | None]] = [("every session", None)]
        if name == "tau-bench":
            variants.append(("reward 0", failed_trials()))
        for marked, failed in variants:
            row = await measure(corpus, opts.model, settings, failed)
            rows.append({"corpus": name, "marked": marked, **row})
            print(rows[-1], file=sys.stderr)
    text = report(rows)
    OUT.write_text(text, encoding="utf-8")
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
