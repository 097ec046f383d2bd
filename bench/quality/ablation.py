"""What each indexer choice gains on each corpus: the served ranking computed exactly by
bench/quality/simulate.py (no database) for the default and for one change at a time, scored
on all tasks and on each half of them (a split by task, so a gain on one half only shows).

    python -m bench.quality.ablation [--out bench/results/ablation-both.md]"""

from __future__ import annotations

import argparse
import sys
from dataclasses import replace
from pathlib import Path

from bench.common.paths import BOTH, result
from bench.quality import simulate
from bench.quality.labelled import CORPORA, Corpus
from bench.quality.scoring import score, task_half
from config.settings import Settings
from indexer.chunking import ChunkPolicy
from indexer.embedders import Embedder
from indexer.lexical import LexicalEmbedder
from resolvers.rules.calibration import CONTRACT_CUTS

OUT = result("ablation", BOTH)
# name, policy, fitted, skip rule, template_min_sessions
Variant = tuple[str, ChunkPolicy, bool, simulate.SkipRule, int]


def variants(settings: Settings) -> list[Variant]:
    policy = ChunkPolicy(
        window_tokens=settings.chunk_tokens, tool_result_tokens=settings.tool_result_tokens
    )

    def share(n: int, total: int) -> bool:
        return n >= settings.repeat_min_sessions and n * 100 >= (
            settings.repeat_min_share_percent * total
        )

    def count(n: int, total: int) -> bool:
        return n >= settings.repeat_min_sessions

    t = settings.template_min_sessions
    return [
        ("default: fitted lexical, defaults", policy, True, share, t),
        ("no fit (every feature weighs 1, no template)", policy, False, share, t),
        ("no template stripping", policy, True, share, 10**9),
        ("template: 10+ sessions (not 20+)", policy, True, share, 10),
        ("repeated content by count only (5+ sessions)", policy, True, count, t),
        ("tool results keep 16 tokens", replace(policy, tool_result_tokens=16), True, share, t),
        ("tool results keep 64 tokens", replace(policy, tool_result_tokens=64), True, share, t),
        ("tool results keep 128 tokens", replace(policy, tool_result_tokens=128), True, share, t),
        ("windows of 256 tokens", replace(policy, window_tokens=256), True, share, t),
        ("windows of 512 tokens", replace(policy, window_tokens=512), True, share, t),
    ]


def row(corpus: Corpus, variant: Variant) -> str:
    name, policy, fitted, skip, template_min = variant
    base: Embedder = LexicalEmbedder()
    chunked = simulate.chunk_corpus(corpus, policy, base, skip)
    embedder = simulate.fitted(chunked, template_min) if fitted else base
    ranking = simulate.served(corpus, chunked, embedder.embed(chunked.texts))
    task = {s.id: s.task for s in corpus.sessions}
    agent = {s.id: s.agent for s in corpus.sessions}
    cells = []
    for half in (None, 0, 1):  # all tasks, then each half of them
        part = {k: v for k, v in ranking.items() if half in (None, task_half(task[k]))}
        s = score(name, part, task, agent, CONTRACT_CUTS)
        cross = "" if s.cross_p_at_5 is None else f" / {s.cross_p_at_5:.3f}"
        cells.append(f"{s.p_at_1:.3f} / {s.p_at_5:.3f}{cross}")
    return f"| {corpus.name} | {name} | {len(chunked.texts)} | " + " | ".join(cells) + " |"


def main(argv: list[str] | None = None) -> int:
    args = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    args.add_argument("--out", default=str(OUT))
    opts = args.parse_args(argv)
    settings = Settings.from_env()
    lines = [
        "# Ablation: one indexer choice at a time (exact served ranking, no database)",
        "",
        "Cells: P@1 / P@5 (/ cross-agent P@5 on coding-agents), on all tasks, then on each",
        "half of the tasks (split by a hash of the task id).",
        "",
        "| corpus | variant | chunks | all tasks | half 0 | half 1 |",
        "|---|---|---|---|---|---|",
    ]
    for load in CORPORA.values():
        corpus = load()
        for variant in variants(settings):
            lines.append(row(corpus, variant))
            print(lines[-1], file=sys.stderr, flush=True)
    lines += ["", "Reproduce: `python -m bench.quality.ablation`", ""]
    Path(opts.out).write_text("\n".join(lines), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
