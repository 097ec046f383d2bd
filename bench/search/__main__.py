"""Search by description on both labelled corpora: the product's lexical leg alone, its
dense leg alone, the two fused (reciprocal rank, and a weighted blend beside it), and
whole-session BM25 on the same sessions, over the description sets of bench/search/queries.

    python -m bench.search [--corpus all|tau-bench|coding-agents] [--no-dense] [--out FILE]

Writes bench/results/search-<corpus>.md (search-both.md for `--corpus all`) unless `--out` says.

Each corpus gets a fresh database `ss_search_<corpus>[_dense]` on the server the CLI uses,
imported as plain activity and indexed by the product (the fitted lexical model, and
all-MiniLM-L6-v2 beside it as the dense model, its vectors cached in bench/.cache)."""

from __future__ import annotations

import argparse
import asyncio
import logging
import statistics
import sys
from collections.abc import Sequence

from bench.common.paths import corpus_name, result
from bench.quality import labelled
from bench.search import metrics
from bench.search.baselines import BM25_ROW, bm25_rankings, relevant_sets, table
from bench.search.product import Prepared, prepare, rankings
from bench.search.queries import query_sets
from bench.search.stored import best_passage_rankings, stored
from config.logs import configure_logging
from config.settings import Settings
from resolvers.comparison.legs import Leg

Row = tuple[str, str, metrics.Figures]
# The other way the issue left open: the fitted lexical model's own vectors (IDF-weighted,
# L2-normalised passages) against the text embedded by the same fit.
LEXICAL_VECTORS_ROW = "fitted lexical vectors (cosine, best passage, no floor)"
CONFIGS: list[tuple[str, Leg | None, bool, bool]] = [  # (row, only, blend, needs dense)
    ("product: lexical leg only (BM25 over passages)", Leg.LEXICAL, False, False),
    ("product: dense leg only (all-MiniLM-L6-v2)", Leg.DENSE, False, True),
    ("product: hybrid, reciprocal-rank fusion (k 60)", None, False, True),
    ("product: hybrid, weighted blend (0.5 / 0.5)", None, True, True),
]


async def measure(
    name: str, dense: bool, settings: Settings, reuse: bool
) -> tuple[list[Row], list[str]]:
    corpus = labelled.CORPORA[name]()
    sets = query_sets(name, corpus)
    rows: list[Row] = []
    notes = []
    prepared: Prepared = await prepare(corpus, dense, settings, reuse)
    try:
        vectors = await stored(prepared.engine, corpus.account_id, "embedding")
        names = {s.id: s.name for s in corpus.sessions}
        for label, queries in sets.items():
            where = f"{name}, {label}"
            relevant = relevant_sets(queries, corpus)
            rows.append(
                (where, BM25_ROW, metrics.figures(bm25_rankings(queries, corpus), relevant))
            )
            by_vectors = best_passage_rankings(vectors, [q.text for q in queries], names)
            rows.append((where, LEXICAL_VECTORS_ROW, metrics.figures(by_vectors, relevant)))
            for row, only, blend, needs_dense in CONFIGS:
                if needs_dense and not dense:
                    continue
                ranked, took = await rankings(prepared, queries, only, blend)
                rows.append((where, row, metrics.figures(ranked, relevant)))
                notes.append(f"{where}, {row}: search median {statistics.median(took):.1f} ms")
    finally:
        await prepared.engine.dispose()
    return rows, notes


async def run(names: Sequence[str], dense: bool, reuse: bool) -> tuple[list[Row], list[str]]:
    settings = Settings.from_env()
    configure_logging("WARNING")
    logging.getLogger("bm25s").setLevel(logging.WARNING)
    rows, notes = [], []
    for name in names:
        more, said = await measure(name, dense, settings, reuse)
        rows += more
        notes += said
    return rows, notes


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.search", description=__doc__)
    parser.add_argument("--corpus", choices=["all", *labelled.CORPORA], default="all")
    parser.add_argument("--no-dense", action="store_true", help="the lexical leg only")
    parser.add_argument("--reuse", action="store_true", help="the databases a run before left")
    parser.add_argument("--out", help="bench/results/search-<corpus>.md (`both` for all)")
    opts = parser.parse_args(argv)
    names = list(labelled.CORPORA) if opts.corpus == "all" else [opts.corpus]
    rows, notes = asyncio.run(run(names, not opts.no_dense, opts.reuse))
    text = "\n".join([table(rows), "", *[f"- {n}" for n in notes], ""])
    print(text)
    out = opts.out or result("search", corpus_name(opts.corpus))
    with open(out, "w", encoding="utf-8") as handle:
        handle.write(HEADER + text)
    return 0


HEADER = """# Search by description

`python -m bench.search` on the description sets of `bench/search/queries/` (written by hand,
none sharing three consecutive words with its task's sessions; "held out": written after the
product was tuned, by someone who tuned nothing on them). Relevant = a session of the
description's task; hit@5: any among the first five; P@5 over five; MRR@10; empty: answers
with no session.

"""


if __name__ == "__main__":
    sys.exit(main())
