"""The product's search on a labelled corpus: the corpus imported and indexed by the product
(the fitted lexical model, and MiniLM beside it as the dense model when asked), then every
description searched in process, leg by leg and fused."""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass

import sqlalchemy as sa
from sqlalchemy.ext.asyncio import AsyncEngine

from bench.common.databases import recreate, with_database
from bench.common.torch_minilm import torch_embedder
from bench.quality import labelled, served
from bench.quality.vector_cache import cached_minilm, cached_torch_minilm
from bench.search.blend import blended_order
from bench.search.queries import Query
from config.settings import Settings
from data.engine import make_engine
from data.migrate import migrate
from data.server import resolve_url
from indexer.embedders import Factory, Registry, minilm
from indexer.lexical import UNFITTED, LexicalEmbedder
from indexer.onnx_minilm import MINILM
from resolvers.arguments import SimilarArgs
from resolvers.comparison.legs import Leg
from resolvers.comparison.search import search_sessions
from resolvers.services import Services
from resolvers.tuning import Tuning

LEXICAL = ("local", "lexical-384", 384)
TOP = 10  # MRR@10 reads ten
Rankings = dict[str, list[str]]


# How MiniLM runs: as the product runs it (int8 ONNX) or under torch; its vectors cached
# (bench/.cache) or embedded afresh (to time the indexing).
RUNTIMES: dict[tuple[str, bool], Factory] = {
    ("onnx", True): cached_minilm,
    ("onnx", False): minilm,
    ("torch", True): cached_torch_minilm,
    ("torch", False): torch_embedder,
}


def registry(runtime: str = "onnx", cached: bool = True) -> Registry:
    return Registry({str(UNFITTED): LexicalEmbedder, str(MINILM): RUNTIMES[runtime, cached]})


@dataclass(frozen=True, slots=True)
class Prepared:
    corpus: labelled.Corpus
    engine: AsyncEngine
    services: Services
    dense: bool


def database_name(corpus: labelled.Corpus, dense: bool, runtime: str = "onnx") -> str:
    suffix = ("_dense" if runtime == "onnx" else f"_{runtime}") if dense else ""
    return "ss_search_" + corpus.name.replace("-", "_") + suffix


async def loaded(
    corpus: labelled.Corpus, dense: bool, settings: Settings, name: str
) -> AsyncEngine:
    """A fresh database `name` with the corpus imported as plain activity, not yet indexed;
    `dense`: MiniLM named as the account's dense model."""
    url = resolve_url(settings.database_url, settings.data_dir)
    engine = make_engine(await recreate(url, name), statement_timeout_ms=600_000)
    await migrate(engine)
    await served.load(engine, corpus, LEXICAL)
    if dense:
        async with engine.begin() as conn:
            await conn.execute(
                sa.text(
                    "UPDATE embedding_settings SET dense_provider = 'local', "
                    "dense_model = 'all-minilm-l6-v2', dense_dimensions = 384 "
                    "WHERE account_id = :a"
                ),
                {"a": corpus.account_id},
            )
    return engine


async def prepare(
    corpus: labelled.Corpus,
    dense: bool,
    settings: Settings,
    reuse: bool = False,
    runtime: str = "onnx",
) -> Prepared:
    """A fresh database (`database_name`) with the corpus imported and indexed, MiniLM run by
    `runtime` (`reuse`: the one a run before left, as it is)."""
    name = database_name(corpus, dense, runtime)
    embedders = registry(runtime)  # one model loaded, for the indexing and the searches
    if reuse:
        url = resolve_url(settings.database_url, settings.data_dir)
        engine = make_engine(with_database(url, name), statement_timeout_ms=600_000)
    else:
        engine = await loaded(corpus, dense, settings, name)
        started = time.perf_counter()
        report = await served.index(engine, settings, corpus, embedders)
        took = time.perf_counter() - started
        print(f"{name}: indexed in {took:.0f} s ({report.chunks_embedded} vectors)")
    services = Services(engine, Tuning.of(settings), embedders=embedders)
    return Prepared(corpus, engine, services, dense)


async def rankings(
    prepared: Prepared, queries: Sequence[Query], only: Leg | None, blend: bool = False
) -> tuple[Rankings, list[float]]:
    """Each description's ranked session names (its first TOP), and each search's time (ms);
    `blend`: the legs' answers fused by the weighted blend instead of the product's rank."""
    names = {s.id: s.name for s in prepared.corpus.sessions}
    out: Rankings = {}
    took = []
    args = SimilarArgs(limit=TOP, max_matches_per_session=1, include_match_text=False)
    for query in queries:
        started = time.perf_counter()
        answer = await search_sessions(
            prepared.services, prepared.corpus.account_id, query.text, args, only
        )
        took.append((time.perf_counter() - started) * 1000)
        if blend:
            out[query.text] = [names[s] for s in blended_order(answer.legs)[:TOP]]
        else:
            out[query.text] = [names[n.runtime_session_id] for n in answer.results]
    return out, took
