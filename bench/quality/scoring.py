"""Scores of a ranking against task labels: P@1, P@5, cross-agent P@5 and band precision.

A ranking maps each session to its neighbours (best first, at least the top 20) with the
similarity the product would show. precision@k divides by k, so a missing neighbour is a
miss. Cross-agent P@5: among the top 20, the first 5 neighbours from another agent."""

from __future__ import annotations

import hashlib
import math
import re
from collections import Counter
from dataclasses import dataclass
from uuid import UUID

import numpy as np

from resolvers.rules.calibration import BandCuts

K = 5
TOP = 20
BANDS = ("close", "related", "loose")
Ranking = dict[UUID, list[tuple[UUID, float]]]
_WORD = re.compile(r"[a-z0-9_]+")


@dataclass(frozen=True, slots=True)
class Scores:
    method: str
    p_at_1: float
    p_at_5: float
    cross_p_at_5: float | None  # None: one agent only
    shown: dict[str, int]  # top-5 neighbours shown per band
    same_task: dict[str, float]  # share of them with the same task


def task_half(task: str) -> int:
    """0 or 1, by a hash of the task id: a split of the tasks that no label chooses."""
    return hashlib.blake2b(task.encode(), digest_size=1).digest()[0] & 1


def band_of(similarity: float, cuts: BandCuts) -> str:
    if similarity >= cuts.close:
        return "close"
    return "related" if similarity >= cuts.related else "loose"


def score(
    method: str,
    ranking: Ranking,
    task: dict[UUID, str],
    agent: dict[UUID, str],
    cuts: BandCuts,
) -> Scores:
    p1 = p5 = cross = 0.0
    shown: Counter[str] = Counter()
    hits: Counter[str] = Counter()
    for session, neighbours in ranking.items():
        top = neighbours[:K]
        same = [task[other] == task[session] for other, _ in top]
        p1 += float(bool(same) and same[0])
        p5 += sum(same) / K
        for (_, similarity), relevant in zip(top, same, strict=True):
            shown[band_of(similarity, cuts)] += 1
            hits[band_of(similarity, cuts)] += relevant
        others = [o for o, _ in neighbours[:TOP] if agent[o] != agent[session]][:K]
        cross += sum(task[o] == task[session] for o in others) / K
    n = len(ranking)
    share = {b: (hits[b] / shown[b] if shown[b] else math.nan) for b in BANDS}
    several = len(set(agent.values())) > 1
    return Scores(method, p1 / n, p5 / n, cross / n if several else None, dict(shown), share)


def tfidf_vectors(texts: list[str]) -> tuple[np.ndarray, list[str]]:
    """Whole-document TF-IDF Gram matrix (cosine), sublinear tf, smoothed idf; computed in
    column blocks so a large vocabulary never needs one dense matrix."""
    docs = [Counter(_WORD.findall(text.lower())) for text in texts]
    vocab = {w: i for i, w in enumerate(sorted({w for d in docs for w in d}))}
    df = np.zeros(len(vocab))
    for d in docs:
        for w in d:
            df[vocab[w]] += 1
    idf = np.log((1 + len(docs)) / (1 + df)) + 1
    gram = np.zeros((len(docs), len(docs)))
    block = 16384
    for start in range(0, len(vocab), block):
        dense = np.zeros((len(docs), min(block, len(vocab) - start)), dtype=np.float32)
        for row, d in enumerate(docs):
            for w, count in d.items():
                col = vocab[w] - start
                if 0 <= col < dense.shape[1]:
                    dense[row, col] = (1 + math.log(count)) * idf[vocab[w]]
        gram += dense.astype(np.float64) @ dense.T.astype(np.float64)
    norms = np.sqrt(np.maximum(np.diag(gram), 1e-24))
    return gram / norms[:, None] / norms[None, :], sorted(vocab)


def from_gram(ids: list[UUID], gram: np.ndarray, limit: int = TOP) -> Ranking:
    """Nearest by a precomputed similarity matrix, self excluded, ties on id."""
    ranking: Ranking = {}
    for i, sid in enumerate(ids):
        order = sorted((j for j in range(len(ids)) if j != i), key=lambda j: (-gram[i, j], ids[j]))
        ranking[sid] = [(ids[j], float(gram[i, j])) for j in order[:limit]]
    return ranking
