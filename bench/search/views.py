"""Would a session-level dense view lift search by description? The product's legs (lexical
BM25 over passages, MiniLM over each passage's best window) beside MiniLM over windows of the
whole session's text (issue #38's reference: 150-word windows of every turn), alone and as a
third leg of the reciprocal-rank fusion, on every description set of a corpus. The session
text is taken three ways: every turn, tool results left out, and tool results cut to their
first 25 words (what the product's passages keep).

    python -m bench.search.views [--corpus tau-bench|coding-agents] [--out FILE]

It reuses the database a `python -m bench.search` run left (`ss_search_<corpus>_dense`), and
writes bench/results/search-views-<corpus>.md."""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import logging
import sys
from collections.abc import Sequence

from bench.common.paths import result
from bench.quality import labelled
from bench.quality.vector_cache import cached_minilm
from bench.search import metrics, product
from bench.search.baselines import (
    Rankings,
    bm25_rankings,
    dense_rankings,
    fused,
    relevant_sets,
    table,
)
from bench.search.queries import Query, query_sets
from config.logs import configure_logging
from config.settings import Settings
from resolvers.comparison.legs import Leg

DEPTH = 50  # each leg's sessions fused (the product's page is cut to ten after fusion)
# (label, words a tool result keeps; None: every word, 0: left out)
VIEWS: list[tuple[str, int | None]] = [
    ("every turn", None),
    ("tool results left out", 0),
    ("tool results' first 25 words", 25),
]
Row = tuple[str, str, metrics.Figures]


def is_tool_result(turn: labelled.Turn) -> bool:
    return turn.kind in ("tool_result", "tool") or turn.role == "tool"


def viewed(corpus: labelled.Corpus, words: int | None) -> labelled.Corpus:
    """The corpus with system turns left out and tool results cut to `words` (None: whole)."""
    sessions = []
    for session in corpus.sessions:
        turns = []
        for turn in session.turns:
            if turn.role == "system" or (words == 0 and is_tool_result(turn)):
                continue
            if words and is_tool_result(turn):
                turn = dataclasses.replace(turn, content=" ".join(turn.content.split()[:words]))
            turns.append(turn)
        sessions.append(dataclasses.replace(session, turns=tuple(turns)))
    return dataclasses.replace(corpus, sessions=sessions)


async def measure(name: str) -> list[Row]:
    corpus = labelled.CORPORA[name]()
    prepared = await product.prepare(corpus, True, Settings.from_env(), reuse=True)
    embedder = cached_minilm()
    product.TOP = DEPTH
    rows: list[Row] = []
    try:
        for label, queries in query_sets(name, corpus).items():
            where = f"{name}, {label}"
            relevant = relevant_sets(queries, corpus)
            lexical, _ = await product.rankings(prepared, queries, Leg.LEXICAL)
            dense, _ = await product.rankings(prepared, queries, Leg.DENSE)
            both = {q: fused([lexical[q], dense[q]]) for q in lexical}
            rows.append(
                (where, "product: hybrid (lexical + dense), RRF", metrics.figures(both, relevant))
            )
            rows.append((where, REFERENCE, metrics.figures(reference(queries, corpus), relevant)))
            for view, words in VIEWS:
                session = dense_rankings(queries, viewed(corpus, words), embedder)
                three = {q: fused([lexical[q], dense[q], session[q][:DEPTH]]) for q in lexical}
                rows.append(
                    (where, f"session windows ({view}) alone", metrics.figures(session, relevant))
                )
                rows.append(
                    (
                        where,
                        f"product + session windows ({view}), RRF of three",
                        metrics.figures(three, relevant),
                    )
                )
    finally:
        await prepared.engine.dispose()
    return rows


REFERENCE = "issue #38's reference: session windows (every turn) + whole-session BM25, RRF"


def reference(queries: Sequence[Query], corpus: labelled.Corpus) -> Rankings:
    """The issue's reference ranking: MiniLM's best 150-word window of each whole session,
    fused by reciprocal rank with whole-session BM25 (each leg's first DEPTH sessions)."""
    session = dense_rankings(queries, corpus, cached_minilm())
    bm25 = bm25_rankings(queries, corpus)
    return {q: fused([bm25[q][:DEPTH], session[q][:DEPTH]]) for q in bm25}


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.search.views", description=__doc__)
    parser.add_argument("--corpus", choices=list(labelled.CORPORA), default="tau-bench")
    parser.add_argument("--out", help="bench/results/search-views-<corpus>.md")
    opts = parser.parse_args(argv)
    configure_logging("WARNING")
    logging.getLogger("bm25s").setLevel(logging.WARNING)
    rows = asyncio.run(measure(opts.corpus))
    text = table(rows)
    print(text)
    out = opts.out or result("search-views", opts.corpus)
    with open(out, "w", encoding="utf-8") as handle:
        handle.write(HEADER + text + "\n")
    return 0


HEADER = """# Search by description: a session-level dense view

`python -m bench.search.views` (see its docstring). Relevant = a session of the description's
task; hit@5, P@5, MRR@10 as in [`search-both.md`](search-both.md). Each leg's first 50 sessions are
fused.

"""


if __name__ == "__main__":
    sys.exit(main())
