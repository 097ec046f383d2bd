"""The quality report: every ranking kept, scored against the task labels, as one table."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any
from uuid import UUID

from bench.quality.scoring import BANDS, Scores, score
from config.settings import Settings
from resolvers.rules.calibration import CONTRACT_CUTS, cut_points

METHODS = {
    "served": "**served** (sampled probes)",
    "centroid": "session centroid",
    "tfidf": "TF-IDF, whole session",
}


def scores_of(data: dict[str, Any]) -> list[tuple[str, Scores]]:
    task = {UUID(k): v for k, v in data["task"].items()}
    agent = {UUID(k): v for k, v in data["agent"].items()}
    out = []
    for row in data["rows"]:
        ranking = {UUID(k): [(UUID(o), s) for o, s in v] for k, v in row["ranking"].items()}
        cuts = cut_points(row["model"]) if row["method"] == "served" else CONTRACT_CUTS
        out.append((row["model"], score(row["method"], ranking, task, agent, cuts)))
    return out


def table(results: dict[str, dict[str, Any]]) -> str:
    def pct(x: float) -> str:
        return "-" if math.isnan(x) else f"{x:.0%}"

    lines = [
        "| corpus | embedder | ranking | P@1 | P@5 | cross-agent P@5 | close: same task (shown) "
        "| related | loose |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for corpus, data in results.items():
        for model, s in scores_of(data):
            cross = "-" if s.cross_p_at_5 is None else f"{s.cross_p_at_5:.3f}"
            bands = " | ".join(f"{pct(s.same_task[b])} ({s.shown.get(b, 0)})" for b in BANDS)
            lines.append(
                f"| {corpus} | {model} | {METHODS[s.method]} | {s.p_at_1:.3f} | {s.p_at_5:.3f} "
                f"| {cross} | {bands} |"
            )
    return "\n".join(lines)


def report(results: dict[str, dict[str, Any]], settings: Settings) -> str:
    cuts = sorted({r["model"] for d in results.values() for r in d["rows"] if r["model"] != "-"})
    notes = [f"- {c}: {n}" for c, d in results.items() for n in d["notes"]]
    return "\n".join(
        [
            "# Similar sessions: ranking quality on two labelled corpora",
            "",
            "Relevant = another session of the same task. P@k divides by k (a missing neighbour",
            "is a miss). Cross-agent P@5: among each session's top 20, the first 5 neighbours",
            "recorded by another agent. Band columns: of the top-5 neighbours shown in that band,",
            "the share with the same task (count shown); served rows use the model's calibrated",
            "cut points (resolvers/rules/calibration.py, docs/calibration.md), the two baselines",
            "the contract's 0.70 / 0.50 on their own cosine.",
            "",
            *[
                f"- {name}: {d['sessions']} sessions, {d['tasks']} tasks"
                for name, d in results.items()
            ],
            "",
            table(results),
            "",
            "Cut points: "
            + "; ".join(
                f"{m} close {cut_points(m)[0]:.2f}, related {cut_points(m)[1]:.2f}" for m in cuts
            )
            + ".",
            f"Indexer settings: chunk_tokens={settings.chunk_tokens}, "
            f"tool_result_tokens={settings.tool_result_tokens}, "
            f"repeat_min_sessions={settings.repeat_min_sessions}, "
            f"repeat_min_share_percent={settings.repeat_min_share_percent}.",
            *notes,
            "",
            "Reproduce: `python -m bench.quality` (then `python -m bench.quality.calibrate`).",
            "",
        ]
    )


def publish(text: str, out: Path) -> None:
    """Print the report and write it to out."""
    print(text)
    out.write_text(text, encoding="utf-8")
