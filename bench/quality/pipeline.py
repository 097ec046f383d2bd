"""The product's pipeline measured on one labelled corpus: a fresh database, the corpus
imported and indexed once per embedder, every session asked over the REST route, beside a
session-centroid ranking and whole-session TF-IDF."""

from __future__ import annotations

import sys
import time
from typing import Any

from bench.common.databases import recreate
from bench.quality import served
from bench.quality.labelled import Corpus
from bench.quality.scoring import Ranking, from_gram, tfidf_vectors
from bench.quality.simulate import nearest, session_texts
from bench.quality.vector_cache import cached_minilm
from config.settings import Settings
from data.engine import make_engine
from data.migrate import migrate
from data.server import resolve_url
from indexer.embedders import Registry
from indexer.lexical import UNFITTED, LexicalEmbedder
from indexer.onnx_minilm import MINILM

MODELS = {"lexical": ("local", "lexical-384", 384), "minilm": ("local", "all-minilm-l6-v2", 384)}


def registry() -> Registry:
    return Registry({str(UNFITTED): LexicalEmbedder, str(MINILM): cached_minilm})


def as_json(ranking: Ranking) -> dict[str, Any]:
    return {str(k): [[str(o), s] for o, s in v] for k, v in ranking.items()}


async def measure(corpus: Corpus, models: list[str], settings: Settings) -> dict[str, Any]:
    """Every model's served ranking and centroid ranking, and TF-IDF, on one corpus."""
    url = resolve_url(settings.database_url, settings.data_dir)
    name = "ss_quality_" + corpus.name.replace("-", "_")
    engine = make_engine(await recreate(url, name), statement_timeout_ms=600_000)
    out: dict[str, Any] = {"rows": [], "notes": []}
    try:
        await migrate(engine)
        started = time.perf_counter()
        await served.load(engine, corpus, MODELS[models[0]])
        out["notes"].append(f"imported in {time.perf_counter() - started:.0f} s")
        reg = registry()
        for key in models:
            await served.use_model(engine, corpus, MODELS[key])
            started = time.perf_counter()
            report = await served.index(engine, settings, corpus, reg)
            index_s = time.perf_counter() - started
            identity = await served.configured(engine, corpus)
            ranking, route_ms = await served.ask_every_session(engine, settings, corpus)
            equal, path, differing = await served.exact_agreement(engine, settings, corpus)
            ids = [s.id for s in corpus.sessions]
            vectors = await served.centroids(engine, corpus, identity)
            out["rows"].append({"model": identity, "method": "served", "ranking": as_json(ranking)})
            out["rows"].append(
                {"model": identity, "method": "centroid", "ranking": as_json(nearest(ids, vectors))}
            )
            out["notes"].append(
                f"{identity}: {report.chunks_written} chunks written, {report.chunks_skipped} "
                f"skipped as repeated, {report.zero_vectors_skipped} without any feature, "
                f"{report.chunks_embedded} embedded; indexed in {index_s:.0f} s; "
                f"REST route median {route_ms:.0f} ms; lists equal to the exact path's "
                f"(limit 20, 5 matches each): {equal} of {len(corpus.sessions)} (served on the "
                f"{path} path)" + "".join(f"; differs: {d}" for d in differing)
            )
            print(f"{corpus.name}: {out['notes'][-1]}", file=sys.stderr)
    finally:
        await engine.dispose()
    gram, _ = tfidf_vectors(session_texts(corpus))
    ids = [s.id for s in corpus.sessions]
    out["rows"].append({"model": "-", "method": "tfidf", "ranking": as_json(from_gram(ids, gram))})
    out["task"] = {str(s.id): s.task for s in corpus.sessions}
    out["agent"] = {str(s.id): s.agent for s in corpus.sessions}
    out["sessions"] = len(corpus.sessions)
    out["tasks"] = len({s.task for s in corpus.sessions})
    return out
