"""Ranking quality on the tau-bench corpus: sessions of the same task are the relevant ones.

Compares the served ranking (resolvers.similar.compare_sessions) with a session-centroid
ranking over the same vectors and a whole-session TF-IDF baseline, for each embedder.

    python -m bench.quality [--model hash|minilm|both] [--out bench/results/quality.md]

Each model gets a fresh database `ss_bench_<model>` on the same server the CLI uses
(DATABASE_URL, else the embedded PostgreSQL); chunking settings come from the
SIMILAR_SESSIONS_* environment as for `similar-sessions index`.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import math
import re
import sys
import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit
from uuid import UUID

import asyncpg
import numpy as np
import sqlalchemy as sa
from sqlalchemy.ext.asyncio import AsyncEngine

from data.engine import make_engine
from data.migrate import migrate
from data.server import resolve_url
from indexer import demo
from indexer.commands import config_from
from indexer.embedders import Registry
from indexer.worker import index_once
from resolvers.arguments import SimilarArgs
from resolvers.ranking import SIMILARITY_BAND_CLOSE, SIMILARITY_BAND_RELATED
from resolvers.similar import Tuning, compare_sessions
from similar_sessions.logs import configure_logging
from similar_sessions.settings import Settings
from transfer.importing import import_lines

K = 5
MODELS = {"hash": ("local", "hash-384", 384), "minilm": ("local", "all-minilm-l6-v2", 384)}
BANDS = ("close", "related", "loose")
_WORD = re.compile(r"[a-z0-9_]+")
Ranking = dict[UUID, list[tuple[UUID, float]]]  # session -> neighbours (best first) with similarity


@dataclass(frozen=True, slots=True)
class Scores:
    method: str
    p_at_1: float
    p_at_5: float
    shown: dict[str, int]  # neighbours shown (top 5) per band
    same_task: dict[str, float]  # share of them that had the same task


def band_of(similarity: float) -> str:
    if similarity >= SIMILARITY_BAND_CLOSE:
        return "close"
    return "related" if similarity >= SIMILARITY_BAND_RELATED else "loose"


def score(method: str, ranking: Ranking, task: dict[UUID, int]) -> Scores:
    """precision@k counts a missing neighbour as a miss (divides by k, not by what was shown)."""
    p1 = p5 = 0.0
    shown: Counter[str] = Counter()
    hits: Counter[str] = Counter()
    for session, neighbours in ranking.items():
        top = neighbours[:K]
        same = [task[other] == task[session] for other, _ in top]
        p1 += float(bool(same) and same[0])
        p5 += sum(same) / K
        for (_, similarity), relevant in zip(top, same, strict=True):
            shown[band_of(similarity)] += 1
            hits[band_of(similarity)] += relevant
    n = len(ranking)
    share = {b: (hits[b] / shown[b] if shown[b] else math.nan) for b in BANDS}
    return Scores(method, p1 / n, p5 / n, dict(shown), share)


def nearest(ids: list[UUID], vectors: np.ndarray) -> Ranking:
    """Cosine top-k among the rows, self excluded, ties on session id."""
    unit = vectors / np.maximum(np.linalg.norm(vectors, axis=1, keepdims=True), 1e-12)
    sims = unit @ unit.T
    ranking: Ranking = {}
    for i, sid in enumerate(ids):
        order = sorted((j for j in range(len(ids)) if j != i), key=lambda j: (-sims[i, j], ids[j]))
        ranking[sid] = [(ids[j], float(sims[i, j])) for j in order[:K]]
    return ranking


def tfidf_vectors(texts: list[str]) -> np.ndarray:
    """Sublinear tf, smoothed idf, L2-normalised rows: the usual whole-document TF-IDF."""
    docs = [Counter(_WORD.findall(text.lower())) for text in texts]
    vocab = {w: i for i, w in enumerate(sorted({w for d in docs for w in d}))}
    df = np.zeros(len(vocab))
    for d in docs:
        for w in d:
            df[vocab[w]] += 1
    idf = np.log((1 + len(docs)) / (1 + df)) + 1
    out = np.zeros((len(docs), len(vocab)))
    for row, d in enumerate(docs):
        for w, count in d.items():
            out[row, vocab[w]] = (1 + math.log(count)) * idf[vocab[w]]
    return out


async def fresh_database(server_url: str, name: str) -> str:
    parts = urlsplit(server_url)
    admin_url = urlunsplit(("postgresql", parts.netloc, "/postgres", parts.query, ""))
    admin = await asyncpg.connect(admin_url)
    try:
        await admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        await admin.execute(f'CREATE DATABASE "{name}"')
    finally:
        await admin.close()
    return urlunsplit((parts.scheme, parts.netloc, "/" + name, parts.query, ""))


async def load_and_index(
    engine: AsyncEngine, settings: Settings, model: tuple[str, str, int]
) -> str:

    await migrate(engine)
    lines = [json.dumps(r) for r in demo.records(demo.load_corpus(), model)]
    async with engine.begin() as conn:
        await import_lines(conn, "tau-bench", lines)
    report = await index_once(
        engine,
        Registry(),
        config_from(settings, progress=False),
        account_ids=[demo.DEMO_ACCOUNT_ID],
    )
    return (
        f"{report.chunks_written} chunks, {report.chunks_skipped} skipped as repeated, "
        f"{report.chunks_embedded} embedded"
    )


async def measure(engine: AsyncEngine) -> tuple[list[Scores], float]:
    account = demo.DEMO_ACCOUNT_ID
    async with engine.connect() as conn:
        sessions = (
            await conn.execute(
                sa.text(
                    "SELECT id, source_id FROM runtime_sessions WHERE account_id = :a ORDER BY id"
                ),
                {"a": account},
            )
        ).all()
        task = {row.id: demo.task_of(row.source_id) for row in sessions}
        ids = [row.id for row in sessions]
        served: Ranking = {}
        latencies = []
        for sid in ids:  # one comparison per request, as the route runs it
            started = time.perf_counter()
            (result,) = await compare_sessions(
                conn, account, [(sid, SimilarArgs(limit=K, max_matches_per_session=0))], Tuning()
            )
            latencies.append(time.perf_counter() - started)
            assert result is not None
            if "similar_comparison_timed_out" in result.degraded.reasons:
                raise RuntimeError(f"the comparison of {sid} timed out: the figures would be wrong")
            served[sid] = [(n.session.id, n.similarity) for n in result.results]
        served_s = float(np.median(latencies))
        chunks = await conn.execute(
            sa.text(
                "SELECT c.runtime_session_id, c.embedding FROM session_chunks c "
                "JOIN embedding_settings s ON s.account_id = c.account_id "
                "AND c.embedding_model = s.model_identity WHERE c.account_id = :a "
                "AND c.embedding_state = 'embedded' AND c.redaction_state = 'clear'"
            ),
            {"a": account},
        )
        by_session: dict[UUID, list[np.ndarray]] = {}
        for sid, vector in chunks:
            by_session.setdefault(sid, []).append(np.asarray(json.loads(vector), dtype=np.float64))
        texts = await conn.execute(
            sa.text(
                "SELECT runtime_session_id, string_agg(content, ' ' ORDER BY ordinal) "
                "FROM runtime_session_activity WHERE account_id = :a AND role <> 'system' "
                "GROUP BY runtime_session_id"
            ),
            {"a": account},
        )
        text_of: dict[UUID, str] = {sid: text for sid, text in texts}
    dims = next(iter(by_session.values()))[0].shape[0]
    centroids = np.stack([np.mean(by_session.get(s, [np.zeros(dims)]), axis=0) for s in ids])
    tfidf = tfidf_vectors([text_of.get(s, "") for s in ids])
    return [
        score("served (sampled chunks)", served, task),
        score("session centroid", nearest(ids, centroids), task),
        score("TF-IDF whole session", nearest(ids, tfidf), task),
    ], served_s


def table(rows: list[tuple[str, Scores]]) -> str:
    def pct(x: float) -> str:
        return "-" if math.isnan(x) else f"{x:.0%}"

    lines = [
        "| embedder | ranking | P@1 | P@5 | close: same task (shown) "
        "| related: same task (shown) | loose: same task (shown) |",
        "|---|---|---|---|---|---|---|",
    ]
    for model, s in rows:
        bands = " | ".join(f"{pct(s.same_task[b])} ({s.shown.get(b, 0)})" for b in BANDS)
        lines.append(f"| {model} | {s.method} | {s.p_at_1:.3f} | {s.p_at_5:.3f} | {bands} |")
    return "\n".join(lines)


async def main(argv: list[str] | None = None) -> int:
    args = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    args.add_argument("--model", choices=["hash", "minilm", "both"], default="both")
    args.add_argument("--out", default=str(Path(__file__).parent / "results" / "quality.md"))
    opts = args.parse_args(argv)
    settings = Settings.from_env()
    configure_logging(settings.log_level)
    server_url = resolve_url(settings.database_url, settings.data_dir)
    rows: list[tuple[str, Scores]] = []
    notes: list[str] = []
    for name in ["hash", "minilm"] if opts.model == "both" else [opts.model]:
        model = MODELS[name]
        identity = f"{model[0]}:{model[1]}@{model[2]}"
        engine = make_engine(
            await fresh_database(server_url, f"ss_bench_{name}"), statement_timeout_ms=600_000
        )
        try:
            started = time.perf_counter()
            indexed = await load_and_index(engine, settings, model)
            index_s = time.perf_counter() - started
            scores, served_s = await measure(engine)
        finally:
            await engine.dispose()
        rows += [(identity, s) for s in scores]
        notes.append(
            f"- {identity}: {indexed}; loaded and indexed in {index_s:.1f} s, "
            f"served comparison median {served_s * 1000:.0f} ms per session"
        )
        print(notes[-1], file=sys.stderr)
    policy = config_from(settings).policy
    report = "\n".join(
        [
            "# Similar sessions: ranking quality on tau-bench airline (200 sessions, 50 tasks x 4)",
            "",
            "Relevant = another session of the same task_id (3 per session). P@5 divides by 5.",
            "Bands use the contract's cut points (close >= 0.70, related >= 0.50) on each",
            "ranking's own cosine similarity; a band's share is over the top-5 neighbours shown.",
            "",
            table(rows),
            "",
            f"Chunking: {policy}, repeat_min_sessions={settings.repeat_min_sessions}.",
            *notes,
            "",
            "Reproduce: `python -m bench.quality --model both`",
            "",
        ]
    )
    print(report)
    write_report(Path(opts.out), report)
    return 0


def write_report(path: Path, report: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(report, encoding="utf-8")


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
