"""Floors and band cut points for a search text, per model family, on both labelled corpora.

A text probe is not a passage: a short text against a passage of 384 tokens scores far lower
than two passages do, so a text gets its own floor and bands. The probes here are not the
description sets (those measure the search, bench/search/queries): each session's first user
message, cut to its first 25 words, searched among the other sessions' passages (exactly,
over the vectors the product stored in the databases `python -m bench.search` left).

- floor: the similarity that at least 95% of the probes' best passage of their own task
  reaches, on each corpus (the lower of the two): below it, a passage is dropped by the dense
  leg, and a probe whose task's passages all fall below it is answered "nothing close
  enough";
- close / related: as for passages (bench/quality/calibrate.py), the lowest cut points at
  which the top-5 sessions shown at or above them share the probe's task at least 90% / the
  band between them at least 60% of the time, on each corpus.

    python -m bench.search && python -m bench.search.calibrate"""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any
from uuid import UUID

import numpy as np

from bench.common.databases import with_database
from bench.quality import labelled
from bench.quality.calibrate import CLOSE_PRECISION, RELATED_PRECISION, PageDetails, meets
from bench.quality.vector_cache import cached_minilm
from bench.search.stored import Stored, stored
from config.settings import Settings
from data.engine import make_engine
from data.server import resolve_url
from indexer.lexical import Fit, LexicalEmbedder

PROBE_WORDS = 25
FLOOR_RECALL = 0.95
TOP_SESSIONS = 5
GRID = [round(i / 100, 2) for i in range(101)]  # 0.00 .. 1.00


@dataclass(frozen=True, slots=True)
class Family:
    name: str
    column: str  # the slot its vectors are in, in the dense databases of bench.search


FAMILIES = (
    Family("local:lexical-384@384", "embedding"),
    Family("local:all-minilm-l6-v2@384", "dense_embedding"),
)


@dataclass(frozen=True, slots=True)
class Measured:
    best: list[float]  # per probe, its best passage of its own task
    shown: PageDetails  # per probe, its top sessions: (similarity, same task, task)


def probes(corpus: labelled.Corpus) -> list[tuple[UUID, str, str]]:
    """(session, task, text): each session's first user message, its first words."""
    out = []
    for session in corpus.sessions:
        first = next((t.content for t in session.turns if t.role == "user" and t.content), "")
        words = first.split()[:PROBE_WORDS]
        if words:
            out.append((session.id, session.task, " ".join(words)))
    return out


async def stored_of(corpus: labelled.Corpus, settings: Settings, column: str) -> Stored:
    """The corpus's stored vectors of the slot, in the dense database bench.search left."""
    url = resolve_url(settings.database_url, settings.data_dir)
    name = "ss_search_" + corpus.name.replace("-", "_") + "_dense"
    engine = make_engine(with_database(url, name))
    try:
        return await stored(engine, corpus.account_id, column)
    finally:
        await engine.dispose()


def embedder(family: Family, fit: Fit | None) -> Any:
    return LexicalEmbedder(fit) if "lexical" in family.name else cached_minilm()


def measure(corpus: labelled.Corpus, family: Family, settings: Settings) -> Measured:
    kept = asyncio.run(stored_of(corpus, settings, family.column))
    matrix, owners, fit = kept.matrix, kept.owners, kept.fit
    task = {s.id: s.task for s in corpus.sessions}
    asked = probes(corpus)
    vectors = np.asarray(embedder(family, fit).embed([text for _, _, text in asked]))
    similarity = vectors @ matrix.T
    owner = np.array([str(s) for s in owners])
    best: list[float] = []
    shown: PageDetails = []
    for row, (session, own_task, _) in zip(similarity, asked, strict=True):
        per_session: dict[str, float] = {}
        for s, value in zip(owner, row.tolist(), strict=True):
            if s != str(session) and value > per_session.get(s, -2.0):
                per_session[s] = value
        same = [v for s, v in per_session.items() if task[UUID(s)] == own_task]
        if same:
            best.append(max(same))
        top = sorted(per_session.items(), key=lambda kv: -kv[1])[:TOP_SESSIONS]
        shown += [(v, task[UUID(s)] == own_task, own_task) for s, v in top]
    return Measured(best, shown)


def floor_of(measured: list[Measured]) -> float:
    """The lowest, over the corpora, of the similarity 95% of probes' best passage reaches."""
    return min(round(float(np.quantile(m.best, 1 - FLOOR_RECALL)), 2) for m in measured)


def bands_of(measured: list[Measured], floor: float) -> tuple[float, float]:
    def keep(low: float, high: float) -> Callable[[float], bool]:
        return lambda s: low <= s < high

    subsets = [m.shown for m in measured]
    grid = [g for g in GRID if g >= floor]
    close = next((c for c in grid if meets(subsets, keep(c, 2.0), CLOSE_PRECISION)), 1.0)
    related = next(
        (r for r in grid if r <= close and meets(subsets, keep(r, close), RELATED_PRECISION)),
        close,
    )
    return close, related


def main() -> int:
    settings = Settings.from_env()
    lines = [
        "| model family | floor | close | related | corpus | probes "
        "| best of own task: p5 / median |",
        "|---|---|---|---|---|---|---|",
    ]
    entries = []
    for family in FAMILIES:
        corpora = {name: labelled.CORPORA[name]() for name in labelled.CORPORA}
        measured = {name: measure(corpus, family, settings) for name, corpus in corpora.items()}
        floor = floor_of(list(measured.values()))
        close, related = bands_of(list(measured.values()), floor)
        for name, m in measured.items():
            p5, median = np.quantile(m.best, 1 - FLOOR_RECALL), np.median(m.best)
            lines.append(
                f"| {family.name} | {floor:.2f} | {close:.2f} | {related:.2f} | {name} "
                f"| {len(m.best)} | {p5:.2f} / {median:.2f} |"
            )
        entries.append(
            f'    ("{family.name}", ProbeKind.TEXT): '
            f"Calibration({floor:.2f}, BandCuts({close:.2f}, {related:.2f})),"
        )
    print("\n".join(lines))
    print("\n".join(entries))
    return 0


if __name__ == "__main__":
    sys.exit(main())
