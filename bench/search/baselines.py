"""Baselines of search by description on the labelled corpora: whole-session BM25 (k1 1.2,
b 0.75, bm25s), all-MiniLM-L6-v2 ranking each session by its best 150-word window, and the
reciprocal-rank fusion (k 60) of the two. Rankings are by session name; no floor.

`python -m bench.search.baselines [--corpus NAME ...] [--minilm] [--out FILE]`"""

from __future__ import annotations

import argparse
import re
import sys
import time
from collections.abc import Callable, Sequence
from typing import Any

import bm25s
import numpy as np
from bm25s.stopwords import STOPWORDS_EN

from bench.quality import labelled
from bench.search import metrics
from bench.search.queries import Query, query_set

TOKEN = re.compile(r"[a-z0-9]+")
STOPWORDS = frozenset(STOPWORDS_EN)  # Lucene's English stop list (33 words)
K1, B = 1.2, 0.75
WINDOW_WORDS = 150
RRF_K = 60
BM25_ROW = "whole-session BM25 (k1 1.2, b 0.75)"
MINILM_ROW = "all-MiniLM-L6-v2, best 150-word window"
FUSION_ROW = "reciprocal-rank fusion of the two (k 60)"
EMBED_BATCH = 256  # windows embedded (and cached) per step, so an interrupted run keeps its work

Rankings = dict[str, list[str]]


def terms(text: str) -> list[str]:
    """BM25's tokens: lowercased runs of ASCII letters and digits, less English stopwords."""
    return [word for word in TOKEN.findall(text.lower()) if word not in STOPWORDS]


def session_text(session: labelled.Session) -> str:
    """The whole session: every turn of every role, tool calls and tool output included."""
    return "\n".join(turn.content for turn in session.turns)


class SessionBM25:
    """One BM25 document per session."""

    def __init__(self, corpus: labelled.Corpus) -> None:
        self.names = [session.name for session in corpus.sessions]
        self.model = bm25s.BM25(k1=K1, b=B, method="lucene")
        documents = [terms(session_text(session)) for session in corpus.sessions]
        self.model.index(documents, show_progress=False)

    def rank(self, text: str) -> list[str]:
        """Sessions that share a term with the text, best first (ties in corpus order)."""
        query = terms(text)
        if not query:
            return []
        scores = self.model.get_scores(query)
        order = np.argsort(-scores, kind="stable")
        return [self.names[i] for i in order if scores[i] > 0]


def relevant_sets(queries: Sequence[Query], corpus: labelled.Corpus) -> dict[str, set[str]]:
    by_task: dict[str, set[str]] = {}
    for session in corpus.sessions:
        by_task.setdefault(session.task, set()).add(session.name)
    return {query.text: by_task[query.task] for query in queries}


def bm25_rankings(queries: Sequence[Query], corpus: labelled.Corpus) -> Rankings:
    index = SessionBM25(corpus)
    return {query.text: index.rank(query.text) for query in queries}


def windows(session: labelled.Session, size: int = WINDOW_WORDS) -> list[str]:
    """Consecutive, non-overlapping runs of `size` whitespace words over the whole session."""
    words = session_text(session).split()
    return [" ".join(words[start : start + size]) for start in range(0, len(words), size)]


def _embedded(embedder: Any, texts: Sequence[str]) -> np.ndarray:
    parts = []
    for start in range(0, len(texts), EMBED_BATCH):
        parts.append(embedder.embed(texts[start : start + EMBED_BATCH]))
        print(f"  embedded {min(start + EMBED_BATCH, len(texts))}/{len(texts)}", file=sys.stderr)
    return np.concatenate(parts)


def dense_rankings(queries: Sequence[Query], corpus: labelled.Corpus, embedder: Any) -> Rankings:
    """Each session scored by its best window's cosine with the description; every session."""
    names: list[str] = []
    starts: list[int] = []
    texts: list[str] = []
    for session in corpus.sessions:
        parts = windows(session)
        if parts:
            names.append(session.name)
            starts.append(len(texts))
            texts.extend(parts)
    vectors = _embedded(embedder, texts)
    probes = embedder.embed([query.text for query in queries])
    best = np.maximum.reduceat(probes @ vectors.T, starts, axis=1)
    return {
        query.text: [names[i] for i in np.argsort(-row, kind="stable")]
        for query, row in zip(queries, best, strict=True)
    }


def fused(legs: Sequence[Sequence[str]], k: int = RRF_K) -> list[str]:
    """Reciprocal-rank fusion: sum of 1 / (k + rank) over the legs (rank from 1); ties keep
    the order in which the legs first name them."""
    scores: dict[str, float] = {}
    for ranking in legs:
        for position, name in enumerate(ranking, 1):
            scores[name] = scores.get(name, 0.0) + 1 / (k + position)
    return sorted(scores, key=lambda name: -scores[name])


def fused_rankings(*legs: Rankings) -> Rankings:
    return {query: fused([leg[query] for leg in legs]) for query in legs[0]}


def minilm() -> Any:
    from bench.quality.vector_cache import cached_minilm

    return cached_minilm()


def measured(
    name: str, with_dense: bool, dense: Callable[[], Any] = minilm
) -> list[tuple[str, str, metrics.Figures]]:
    """(corpus, ranking, figures) for BM25 and, if asked, MiniLM and their fusion."""
    corpus = labelled.CORPORA[name]()
    queries = query_set(name, corpus)
    relevant = relevant_sets(queries, corpus)
    started = time.perf_counter()
    lexical = bm25_rankings(queries, corpus)
    print(f"{name}: BM25 in {time.perf_counter() - started:.1f} s", file=sys.stderr)
    rows = [(name, BM25_ROW, metrics.figures(lexical, relevant))]
    if with_dense:
        started = time.perf_counter()
        semantic = dense_rankings(queries, corpus, dense())
        print(f"{name}: MiniLM in {time.perf_counter() - started:.1f} s", file=sys.stderr)
        both = fused_rankings(lexical, semantic)
        rows.append((name, MINILM_ROW, metrics.figures(semantic, relevant)))
        rows.append((name, FUSION_ROW, metrics.figures(both, relevant)))
    return rows


def table(rows: Sequence[tuple[str, str, metrics.Figures]]) -> str:
    lines = [
        "| corpus | ranking | descriptions | hit@5 | P@5 | MRR@10 | empty answers |",
        "|---|---|---|---|---|---|---|",
    ]
    for corpus, ranking, f in rows:
        lines.append(
            f"| {corpus} | {ranking} | {f.queries} | {f.hit_at_5:.3f} | {f.precision_at_5:.3f}"
            f" | {f.mrr_at_10:.3f} | {f.empty} |"
        )
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.search.baselines", description=__doc__)
    parser.add_argument("--corpus", action="append", choices=list(labelled.CORPORA))
    parser.add_argument("--minilm", action="store_true", help="add MiniLM and the fusion (slow)")
    parser.add_argument("--out", help="also write the table to this file")
    args = parser.parse_args(argv)
    rows = [row for name in args.corpus or labelled.CORPORA for row in measured(name, args.minilm)]
    text = table(rows)
    print(text)
    if args.out:
        with open(args.out, "w", encoding="utf-8") as handle:
            handle.write(text + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
