"""Search by description on both labelled corpora: the product's lexical leg alone, its
dense leg alone, the two fused (reciprocal rank, and a weighted blend beside it), and
whole-session BM25 on the same sessions, over the description sets of bench/search/queries.

    python -m bench.search [--corpus all|tau-bench|coding-agents] [--no-dense] [--torch]
                           [--out FILE]

Writes bench/results/search-<corpus>.md (search-both.md for `--corpus all`) unless `--out` says.

Each corpus gets a fresh database `ss_search_<corpus>[_dense]` on the server the CLI uses,
imported as plain activity and indexed by the product (the fitted lexical model, and
all-MiniLM-L6-v2 beside it as the dense model, its vectors cached in bench/.cache). With
`--torch`, a second database `ss_search_<corpus>_torch` is indexed the same way with MiniLM
run under torch instead of the product's int8 ONNX build, and its dense and hybrid rows are
printed beside."""

from __future__ import annotations

import argparse
import asyncio
import logging
import statistics
import sys
from collections.abc import Sequence

from bench.common.paths import corpus_name, result
from bench.common.torch_minilm import INSTALL, torch_installed
from bench.quality import labelled
from bench.search import metrics
from bench.search.baselines import BM25_ROW, bm25_rankings, relevant_sets, table
from bench.search.product import Prepared, prepare, rankings
from bench.search.queries import Query, query_sets
from bench.search.stored import best_passage_rankings, stored
from config.logs import configure_logging
from config.settings import Settings
from resolvers.comparison.legs import Leg

Row = tuple[str, str, metrics.Figures]
# The other way the issue left open: the fitted lexical model's own vectors (IDF-weighted,
# L2-normalised passages) against the text embedded by the same fit.
LEXICAL_VECTORS_ROW = "fitted lexical vectors (cosine, best passage, no floor)"
LEXICAL_ROW = "product: lexical leg only (BM25 over passages)"
DENSE_ROWS: list[tuple[str, Leg | None, bool]] = [  # (row, only, blend), for each runtime
    ("product: dense leg only ({model})", Leg.DENSE, False),
    ("product: hybrid, reciprocal-rank fusion (k 60), {model}", None, False),
    ("product: hybrid, weighted blend (0.5 / 0.5), {model}", None, True),
]
MODELS = {"onnx": "MiniLM int8 ONNX", "torch": "MiniLM under torch"}


async def _row(
    prepared: Prepared, where: str, row: str, queries: list[Query], only: Leg | None, blend: bool
) -> tuple[Row, str]:
    """One ranking's figures over one description set, and its search median."""
    ranked, took = await rankings(prepared, queries, only, blend)
    figures = metrics.figures(ranked, relevant_sets(queries, prepared.corpus))
    return (where, row, figures), f"{where}, {row}: search median {statistics.median(took):.1f} ms"


async def measure(
    name: str, runtimes: Sequence[str], settings: Settings, reuse: bool
) -> tuple[list[Row], list[str]]:
    """Every row for one corpus; `runtimes`: how MiniLM runs for the dense rows (none: the
    lexical leg only), each in its own database."""
    corpus = labelled.CORPORA[name]()
    sets = query_sets(name, corpus)
    rows: list[Row] = []
    notes: list[str] = []
    dense = bool(runtimes)
    prepared = [
        await prepare(corpus, dense, settings, reuse, runtime) for runtime in runtimes or ["onnx"]
    ]
    try:
        first = prepared[0]
        vectors = await stored(first.engine, corpus.account_id, "embedding")
        names = {s.id: s.name for s in corpus.sessions}
        for label, queries in sets.items():
            where = f"{name}, {label}"
            relevant = relevant_sets(queries, corpus)
            rows.append(
                (where, BM25_ROW, metrics.figures(bm25_rankings(queries, corpus), relevant))
            )
            by_vectors = best_passage_rankings(vectors, [q.text for q in queries], names)
            rows.append((where, LEXICAL_VECTORS_ROW, metrics.figures(by_vectors, relevant)))
            asked = [(first, LEXICAL_ROW, Leg.LEXICAL, False)] + [
                (each, row.format(model=MODELS[runtime]), only, blend)
                for runtime, each in zip(runtimes, prepared, strict=False)
                for row, only, blend in DENSE_ROWS
            ]
            for each, row, only, blend in asked:
                figures, note = await _row(each, where, row, queries, only, blend)
                rows.append(figures)
                notes.append(note)
    finally:
        for each in prepared:
            await each.engine.dispose()
    return rows, notes


async def run(
    names: Sequence[str], runtimes: Sequence[str], reuse: bool
) -> tuple[list[Row], list[str]]:
    settings = Settings.from_env()
    configure_logging("WARNING")
    logging.getLogger("bm25s").setLevel(logging.WARNING)
    rows, notes = [], []
    for name in names:
        more, said = await measure(name, runtimes, settings, reuse)
        rows += more
        notes += said
    return rows, notes


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.search", description=__doc__)
    parser.add_argument("--corpus", choices=["all", *labelled.CORPORA], default="all")
    parser.add_argument("--no-dense", action="store_true", help="the lexical leg only")
    parser.add_argument(
        "--torch", action="store_true", help=f"MiniLM under torch beside ONNX (`{INSTALL}`)"
    )
    parser.add_argument("--reuse", action="store_true", help="the databases a run before left")
    parser.add_argument("--out", help="bench/results/search-<corpus>.md (`both` for all)")
    opts = parser.parse_args(argv)
    names = list(labelled.CORPORA) if opts.corpus == "all" else [opts.corpus]
    runtimes = [] if opts.no_dense else ["onnx", "torch"] if opts.torch else ["onnx"]
    if opts.torch and not torch_installed():
        parser.error(f"--torch needs torch: {INSTALL}")
    rows, notes = asyncio.run(run(names, runtimes, opts.reuse))
    text = "\n".join([table(rows), "", *[f"- {n}" for n in notes], ""])
    print(text)
    out = opts.out or result("search", corpus_name(opts.corpus))
    with open(out, "w", encoding="utf-8") as handle:
        handle.write(HEADER + text)
    return 0


HEADER = """# Search by description

`python -m bench.search` on the description sets of `bench/search/queries/` (written by hand,
none sharing three consecutive words with its task's sessions; "held out": written after the
product was tuned, by someone who tuned nothing on them; "another writer": written from the
tasks' instructions alone by a writer never shown a session or the other sets). Relevant = a
session of the
description's task; hit@5: any among the first five; P@5 over five; MRR@10; empty: answers
with no session.

"""


if __name__ == "__main__":
    sys.exit(main())
