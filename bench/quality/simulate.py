"""The served ranking without a database, for fast ablations: the product's chunker, its
repeated-content rule and embedders, then the contract's comparison (8 probes at the
contract's positions, 25 nearest per probe at similarity >= 0.35, best passage plus
0.02 ln(matched)) computed exactly in numpy with resolvers.rules.ranking.

bench.quality measures the product itself; this module only explores variants quickly."""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from uuid import UUID, uuid5

import numpy as np

from bench.quality.labelled import T0, TURN, Corpus, Session
from bench.quality.scoring import Ranking, from_gram
from indexer.chunking import ChunkPolicy, Turn, chunk_session
from indexer.embedders import Embedder
from indexer.lexical import Fit, LexicalEmbedder
from indexer.rechunk import policy_for
from resolvers.rules.ranking import (
    MIN_SIMILAR_SIMILARITY,
    SIMILAR_NEIGHBOURS_PER_PROBE,
    Hit,
    probe_positions,
    rank_neighbours,
)

SkipRule = Callable[[int, int], bool]  # (sessions holding the content, sessions in account)


@dataclass
class Chunked:
    session_of: np.ndarray  # row -> session position
    texts: list[str]
    per_session: list[list[int]]  # session position -> its rows, in chunk order


def product_turns(session: Session) -> list[Turn]:
    return [
        Turn(uuid5(session.id, f"activity:{i}"), i, T0 + i * TURN, t.role, t.kind, t.content)
        for i, t in enumerate(session.turns)
    ]


def chunk_corpus(
    corpus: Corpus, policy: ChunkPolicy, embedder: Embedder, skip: SkipRule
) -> Chunked:
    """Chunk every session, then drop content the skip rule calls repeated."""
    sized = policy_for(policy, embedder)
    raw = [
        [c.content for c in chunk_session(product_turns(s), sized, embedder.token_cost)]
        for s in corpus.sessions
    ]
    holders: Counter[str] = Counter()
    for texts in raw:
        holders.update(set(texts))
    total = len(raw)
    session_of: list[int] = []
    texts_out: list[str] = []
    per_session: list[list[int]] = []
    for position, texts in enumerate(raw):
        rows = []
        for text in texts:
            if skip(holders[text], total):
                continue
            rows.append(len(texts_out))
            texts_out.append(text)
            session_of.append(position)
        per_session.append(rows)
    return Chunked(np.array(session_of, dtype=np.int64), texts_out, per_session)


def fitted(chunked: Chunked, template_min_sessions: int = 20) -> LexicalEmbedder:
    """The lexical embedder fitted on the chunks, as the indexer fits an account."""
    sessions = [[chunked.texts[r] for r in rows] for rows in chunked.per_session]
    return LexicalEmbedder(Fit.of_sessions(sessions, template_min_sessions))


def served(corpus: Corpus, chunked: Chunked, vectors: np.ndarray, limit: int = 20) -> Ranking:
    """Each session's neighbours as the contract ranks them (zero vectors never embedded)."""
    live = np.linalg.norm(vectors, axis=1) > 0
    ids = [s.id for s in corpus.sessions]
    chunk_ids = [uuid5(ids[s], f"chunk:{i}") for i, s in enumerate(chunked.session_of.tolist())]
    ranking: Ranking = {}
    for position, rows in enumerate(chunked.per_session):
        embedded = [r for r in rows if live[r]]
        probes = [embedded[p] for p in probe_positions(len(embedded))]
        if not probes:
            ranking[ids[position]] = []
            continue
        sims = vectors[probes] @ vectors.T
        sims[:, chunked.session_of == position] = -np.inf
        sims[:, ~live] = -np.inf
        hits = []
        k = SIMILAR_NEIGHBOURS_PER_PROBE
        for p, row in enumerate(sims):
            top = np.argpartition(-row, k)[:k] if row.shape[0] > k else np.arange(row.shape[0])
            for j in top.tolist():
                if row[j] >= MIN_SIMILAR_SIMILARITY:
                    hits.append(
                        Hit(p, chunk_ids[j], ids[int(chunked.session_of[j])], float(row[j]))
                    )
        ranking[ids[position]] = [
            (n.session_id, n.similarity) for n in rank_neighbours(hits, 0)[:limit]
        ]
    return ranking


def nearest(ids: list[UUID], vectors: np.ndarray, limit: int = 20) -> Ranking:
    """Cosine nearest rows, self excluded, ties on id."""
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    unit = vectors / np.maximum(norms, 1e-12)
    return from_gram(ids, unit @ unit.T, limit)


def centroids(corpus: Corpus, chunked: Chunked, vectors: np.ndarray) -> np.ndarray:
    dims = vectors.shape[1]
    out = np.zeros((len(corpus.sessions), dims))
    for position, rows in enumerate(chunked.per_session):
        live = [r for r in rows if np.linalg.norm(vectors[r]) > 0]
        if live:
            out[position] = vectors[live].mean(axis=0)
    return out


def cut_shares(ranking: Ranking, task: dict[UUID, str], cuts: list[float]) -> list[float]:
    """Share of top-5 neighbours at or above each cut that share the task."""
    pairs = [(s, task[o] == task[q]) for q, n in ranking.items() for o, s in n[:5]]
    out = []
    for cut in cuts:
        sel = [same for s, same in pairs if s >= cut]
        out.append(sum(sel) / len(sel) if sel else math.nan)
    return out


def session_texts(corpus: Corpus) -> list[str]:
    return [" ".join(t.content for t in s.turns if t.role != "system") for s in corpus.sessions]
