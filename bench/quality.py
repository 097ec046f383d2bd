"""Ranking quality of the served pipeline on both labelled corpora, for every built-in
embedder, beside a session-centroid ranking and whole-session TF-IDF.

    python -m bench.quality [--corpus all|tau-bench|coding-agents] [--model all|lexical|minilm]
                            [--report-only]

Each corpus gets a fresh database `ss_quality_<corpus>` on the server the CLI uses
(DATABASE_URL, else the embedded PostgreSQL): imported as plain activity, indexed with the
SIMILAR_SESSIONS_* settings (their defaults unless set), then asked over the REST route for
every session (top 20), once per embedder (the account's setting is switched between them).
MiniLM vectors are cached in bench/.cache by (model, text). Rankings are kept in
bench/.cache/rankings.json: `--report-only` re-scores them (e.g. after a calibration).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import math
import sys
import time
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit
from uuid import UUID

import asyncpg

from bench import served
from bench.labelled import CORPORA, Corpus
from bench.scoring import BANDS, Scores, from_gram, score, tfidf_vectors
from bench.simulate import nearest, session_texts
from bench.vector_cache import CACHE_DIR, CachedEmbedder
from config.logs import configure_logging
from config.settings import Settings
from data.engine import make_engine
from data.migrate import migrate
from data.server import resolve_url
from indexer.embedders import MINILM, MiniLMEmbedder, Registry
from indexer.lexical import UNFITTED, LexicalEmbedder
from resolvers.calibration import CONTRACT_CUTS, cut_points

MODELS = {"lexical": ("local", "lexical-384", 384), "minilm": ("local", "all-minilm-l6-v2", 384)}
RANKINGS = CACHE_DIR / "rankings.json"
OUT = Path(__file__).parent / "results" / "quality.md"


def registry() -> Registry:
    return Registry(
        {str(UNFITTED): LexicalEmbedder, str(MINILM): lambda: CachedEmbedder(MiniLMEmbedder())}
    )


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


def as_json(ranking: dict[UUID, list[tuple[UUID, float]]]) -> dict[str, Any]:
    return {str(k): [[str(o), s] for o, s in v] for k, v in ranking.items()}


async def measure(corpus: Corpus, models: list[str], settings: Settings) -> dict[str, Any]:
    """Every model's served ranking and centroid ranking, and TF-IDF, on one corpus."""
    url = resolve_url(settings.database_url, settings.data_dir)
    name = "ss_quality_" + corpus.name.replace("-", "_")
    engine = make_engine(await fresh_database(url, name), statement_timeout_ms=600_000)
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
            "cut points (resolvers/calibration.py, docs/calibration.md), the two baselines the",
            "contract's 0.70 / 0.50 on their own cosine.",
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
            "Reproduce: `python -m bench.quality` (then `python -m bench.calibrate`).",
            "",
        ]
    )


async def main(argv: list[str] | None = None) -> int:
    args = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    args.add_argument("--corpus", choices=["all", *CORPORA], default="all")
    args.add_argument("--model", choices=["all", *MODELS], default="all")
    args.add_argument("--report-only", action="store_true")
    args.add_argument("--out", default=str(OUT))
    opts = args.parse_args(argv)
    settings = Settings.from_env()
    configure_logging(settings.log_level)
    # Generous bounds: a comparison cut short would be a wrong figure, not a slow one.
    settings = settings.model_copy(
        # one key asks every session back to back: no per-key rate limit
        update={
            "comparison_timeout_ms": 120_000,
            "statement_timeout_ms": 600_000,
            "rate_limit": None,
        }
    )
    results: dict[str, Any] = stored()
    if not opts.report_only:
        names = list(CORPORA) if opts.corpus == "all" else [opts.corpus]
        models = list(MODELS) if opts.model == "all" else [opts.model]
        for name in names:
            results[name] = await measure(CORPORA[name](), models, settings)
            RANKINGS.parent.mkdir(parents=True, exist_ok=True)
            save(RANKINGS, json.dumps(results))
    text = report({k: results[k] for k in CORPORA if k in results}, settings)
    print(text)
    save(Path(opts.out), text)
    return 0


def stored() -> dict[str, Any]:
    return json.loads(RANKINGS.read_text()) if RANKINGS.exists() else {}


def save(path: Path, text: str) -> None:
    path.write_text(text, encoding="utf-8")


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
