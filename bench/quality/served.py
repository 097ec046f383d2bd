"""The product's own pipeline on a labelled corpus: import as plain activity, `index` with
the settings' defaults, then the REST route for every session."""

from __future__ import annotations

import json
import statistics
import time
from uuid import UUID

import httpx
import numpy as np
import sqlalchemy as sa
from sqlalchemy.ext.asyncio import AsyncEngine

from bench.quality.labelled import Corpus, records
from bench.quality.scoring import TOP, Ranking
from config.settings import Settings
from data import comparison
from indexer.commands import config_from
from indexer.embedders import Registry
from indexer.passes import PassReport
from indexer.worker import index_once
from resolvers.arguments import SimilarArgs
from resolvers.comparison.phases import compare_sessions
from resolvers.comparison.state import NOT_NARROWED
from resolvers.tuning import Tuning
from similar_sessions.app import create_app
from transfer.importing import import_lines


async def load(engine: AsyncEngine, corpus: Corpus, model: tuple[str, str, int]) -> None:
    lines = [json.dumps(r) for r in records(corpus, model)]
    async with engine.begin() as conn:
        await import_lines(conn, corpus.name, lines)


async def use_model(engine: AsyncEngine, corpus: Corpus, model: tuple[str, str, int]) -> None:
    """Point the account's setting at another model, as an operator would."""
    provider, name, dims = model
    async with engine.begin() as conn:
        await conn.execute(
            sa.text(
                "UPDATE embedding_settings SET provider = :p, model = :m, dimensions = :d "
                "WHERE account_id = :a"
            ),
            {"p": provider, "m": name, "d": dims, "a": corpus.account_id},
        )


async def index(
    engine: AsyncEngine, settings: Settings, corpus: Corpus, registry: Registry
) -> PassReport:
    config = config_from(settings, progress=False)
    return await index_once(engine, registry, config, account_ids=[corpus.account_id])


async def configured(engine: AsyncEngine, corpus: Corpus) -> str:
    async with engine.connect() as conn:
        return str(
            (
                await conn.execute(
                    sa.text("SELECT model_identity FROM embedding_settings WHERE account_id = :a"),
                    {"a": corpus.account_id},
                )
            ).scalar_one()
        )


async def ask_every_session(
    engine: AsyncEngine, settings: Settings, corpus: Corpus
) -> tuple[Ranking, float]:
    """Each session's top 20 over the REST route, and the route's median latency (ms)."""
    app = create_app(settings, engine=engine, run_migrations=False)
    transport = httpx.ASGITransport(app=app)
    auth = {"Authorization": f"Bearer {corpus.api_key}"}
    ranking: Ranking = {}
    latencies = []
    async with httpx.AsyncClient(transport=transport, base_url="http://bench") as http:
        for session in corpus.sessions:
            started = time.perf_counter()
            answer = await http.get(
                f"/api/v1/runtime-sessions/{session.id}/similar",
                params={"limit": TOP, "max_matches_per_session": 0, "include_match_text": False},
                headers=auth,
            )
            latencies.append((time.perf_counter() - started) * 1000)
            answer.raise_for_status()
            body = answer.json()
            if "similar_comparison_timed_out" in body["degraded"]["reasons"]:
                raise RuntimeError(f"the comparison of {session.name} timed out")
            ranking[session.id] = [
                (UUID(r["runtime_session_id"]), float(r["similarity"])) for r in body["results"]
            ]
    return ranking, statistics.median(latencies)


async def centroids(engine: AsyncEngine, corpus: Corpus, identity: str) -> np.ndarray:
    """Each session's mean chunk vector under the model (zeros for a session without any)."""
    async with engine.connect() as conn:
        rows = await conn.execute(
            sa.text(
                "SELECT runtime_session_id, embedding::text FROM session_chunks "
                "WHERE account_id = :a AND embedding_model = :m "
                "AND embedding_state = 'embedded' AND redaction_state = 'clear'"
            ),
            {"a": corpus.account_id, "m": identity},
        )
        by_session: dict[UUID, list[np.ndarray]] = {}
        for sid, text in rows:
            by_session.setdefault(sid, []).append(np.asarray(json.loads(text), dtype=np.float64))
    dims = next(iter(by_session.values()))[0].shape[0]
    return np.stack(
        [np.mean(by_session.get(s.id, [np.zeros(dims)]), axis=0) for s in corpus.sessions]
    )


async def exact_agreement(
    engine: AsyncEngine, settings: Settings, corpus: Corpus
) -> tuple[int, str, list[str]]:
    """How many sessions' served lists (limit 20, 5 matches each) equal those of the exact
    path, the paths the served ones took, and each differing session named with what its
    served answer said (its reasons, and how many neighbours each list has)."""
    served = Tuning.of(settings)
    exact = Tuning.of(settings.model_copy(update={"exact_scan_max_chunks": 10**8}))
    equal, paths, differing = 0, set(), []
    for session in corpus.sessions:
        got = await _listed(engine, corpus, session.id, served)
        want = await _listed(engine, corpus, session.id, exact)
        paths.add(got[0])
        if got[1] == want[1]:
            equal += 1
        else:
            differing.append(
                f"{session.name}: served {len(got[1])} neighbours, exact {len(want[1])}; "
                f"served reasons {got[2] or 'none'}"
            )
    return equal, "/".join(sorted(paths)), differing


async def _listed(
    engine: AsyncEngine, corpus: Corpus, session: UUID, tuning: Tuning
) -> tuple[str, list[tuple[UUID, float, int]], list[str]]:
    args = SimilarArgs(limit=20, max_matches_per_session=5)
    async with comparison.reading(engine) as conn:  # as the route opens it
        [result] = await compare_sessions(
            conn, corpus.account_id, [(session, args, NOT_NARROWED)], tuning
        )
    assert result is not None
    listed = [(n.session.id, round(n.score, 9), n.matched_chunk_count) for n in result.results]
    return str(result.lookup_path), listed, list(result.degraded.reasons)
