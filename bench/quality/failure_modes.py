"""How well failure modes' groups match tasks on the two labelled corpora.

    python -m bench.quality.failure_modes [--corpus all|tau-bench|coding-agents]
                                          [--model lexical|minilm]

Each corpus gets a fresh database fm_quality_<corpus>: imported as plain activity, its
sessions spread over the last 28 days, indexed with the product's defaults, and grouped by
the product's own use case (resolvers/failure_modes.py) over a 30-day window, every session
of the window compared (the bound raised to hold them all). Marked failed: every session of
both corpora; and, on tau-bench, only the trials of reward 0 (the others completed).

The product's rule (average linkage at the related cut point, resolvers/rules/failure_groups.py)
is printed beside the rule it replaced (connected components of the links at related or
closer), both over the same comparison of the window's sessions. Purity: of all grouped
sessions, the share that share their group's majority task. Completeness: of all sessions, the
share in the group holding most of their task's sessions. ARI and V-measure against the tasks
are scikit-learn's. Writes bench/results/failure-modes-quality-<corpus>.md (`both` for
`--corpus all`)."""

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

from sklearn.metrics import adjusted_rand_score, v_measure_score

from bench.common.databases import recreate
from bench.common.paths import corpus_name, result
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
from resolvers.failure_modes import compare_window, grouping, links_of, lookups
from resolvers.rules.failure_groups import Link
from resolvers.services import Services
from resolvers.tuning import Tuning
from transfer.importing import import_lines

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


def components(
    sessions: list[UUID], links: list[Link], related: dict[UUID, float]
) -> list[list[UUID]]:
    """The rule the product replaced: connected components of the links at related or closer."""
    parent = {s: s for s in sessions}

    def root(s: UUID) -> UUID:
        while parent[s] != s:
            parent[s] = parent[parent[s]]
            s = parent[s]
        return s

    for link in links:
        if link.b in parent and link.similarity >= related[link.a]:
            parent[root(link.a)] = root(link.b)
    found: dict[UUID, list[UUID]] = {}
    for s in sessions:
        found.setdefault(root(s), []).append(s)
    return list(found.values())


def scores(members: list[list[UUID]], task: dict[UUID, str]) -> dict[str, Any]:
    """Purity, completeness, ARI and V-measure of the groups against the tasks, and the
    groups' shape."""
    grouped = [s for ms in members for s in ms]
    purity = sum(Counter(task[s] for s in ms).most_common(1)[0][1] for ms in members)
    by_task: dict[str, Counter[int]] = {}
    for n, ms in enumerate(members):
        for s in ms:
            by_task.setdefault(task[s], Counter())[n] += 1
    complete = sum(c.most_common(1)[0][1] for c in by_task.values())
    sizes = sorted((len(ms) for ms in members), reverse=True)
    per_task = Counter(task[s] for s in grouped)
    truth = [task[s] for ms in members for s in ms]
    labels = [n for n, ms in enumerate(members) for _ in ms]
    return {
        "sessions": len(grouped),
        "tasks": len(per_task),
        "largest_task": max(per_task.values()) if per_task else 0,
        "groups": len(members),
        "largest_share": sizes[0] / len(grouped) if grouped else float("nan"),
        "ari": adjusted_rand_score(truth, labels) if grouped else float("nan"),
        "v_measure": v_measure_score(truth, labels) if grouped else float("nan"),
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
        found, _ = await grouping(context, args)
        took = time.perf_counter() - started
        chosen, _ = await group_terms(context, found.groups[:10])
        # The replaced rule, over the same comparison of the window's sessions.
        links_args, _ = lookups(args, found.window_start)
        ids = [row.id for row in found.found.sessions]
        near = await compare_window(context, ids, links_args, found.pin.window_end)
        embedded = {i: r for i, r in near.items() if r.model_identity is not None}
        links = [link for i, r in embedded.items() for link in links_of(i, r)]
        related = {i: r.bands.related for i, r in embedded.items()}
        old = components(sorted(embedded), links, related)
        identity = await served.configured(engine, corpus)
    finally:
        await engine.dispose()
    task = {s.id: s.task for s in corpus.sessions}
    out: dict[str, Any] = {
        "new": scores([[m.session_id for m in g.members] for g in found.groups], task),
        "old": scores(old, task),
    }
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
        "window, every session of the window compared. Rule: `average` is the product's "
        "(average linkage at the related cut point), `components` the one it replaced "
        "(connected components of the links at related or closer), over the same comparison. "
        "Purity: the share of grouped sessions that share their group's majority task. "
        "Completeness: the share of sessions in the group that holds most of their task. "
        "ARI and V-measure against the tasks (scikit-learn). Largest: the largest group's share "
        "of the sessions (the largest task's share beside it). Seconds: the product's grouping, "
        "in process.",
        "",
        "| corpus | marked failed | rule | sessions | tasks | groups | of one | largest | "
        "largest share (task) | purity | completeness | ARI | V-measure | seconds |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        for rule, key in (("components", "old"), ("**average**", "new")):
            x = r[key]
            lines.append(
                f"| {r['corpus']} | {r['marked']} | {rule} | {x['sessions']} | {x['tasks']} | "
                f"{x['groups']} | {x['singletons']} | {', '.join(map(str, x['largest']))} | "
                f"{x['largest_share']:.3f} ({x['largest_task'] / x['sessions']:.3f}) | "
                f"{x['purity']:.3f} | {x['completeness']:.3f} | {x['ari']:.3f} | "
                f"{x['v_measure']:.3f} | {r['seconds'] if key == 'new' else ''} |"
            )
    lines += ["", f"Model: `{rows[0]['identity']}` and its fits." if rows else ""]
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
    result("failure-modes-quality", corpus_name(opts.corpus)).write_text(text, encoding="utf-8")
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
