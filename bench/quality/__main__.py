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
import sys
from pathlib import Path
from typing import Any

from bench.common.paths import BOTH, result
from bench.quality.labelled import CORPORA
from bench.quality.pipeline import MODELS, measure
from bench.quality.rankings import keep, stored
from bench.quality.report import publish, report
from config.logs import configure_logging
from config.settings import Settings

OUT = result("quality", BOTH)  # the report holds every corpus kept


async def main(argv: list[str] | None = None) -> int:
    args = argparse.ArgumentParser(
        prog="python -m bench.quality", description=__doc__.splitlines()[0] if __doc__ else None
    )
    args.add_argument("--corpus", choices=["all", *CORPORA], default="all")
    args.add_argument("--model", choices=["all", *MODELS], default="all")
    args.add_argument("--report-only", action="store_true")
    args.add_argument("--out", default=str(OUT))
    opts = args.parse_args(argv)
    settings = Settings.from_env()
    configure_logging(settings.log_level)
    # Generous bounds: a comparison cut short would be a wrong figure, not a slow one.
    settings = settings.model_copy(
        # one key asks every session back to back: no per-key or per-account rate limit
        update={
            "comparison_timeout_ms": 120_000,
            "statement_timeout_ms": 600_000,
            "rate_limit": None,
            "account_rate_limit": None,
        }
    )
    results: dict[str, Any] = stored()
    if not opts.report_only:
        names = list(CORPORA) if opts.corpus == "all" else [opts.corpus]
        models = list(MODELS) if opts.model == "all" else [opts.model]
        for name in names:
            results[name] = await measure(CORPORA[name](), models, settings)
            keep(results)
    publish(report({k: results[k] for k in CORPORA if k in results}, settings), Path(opts.out))
    return 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
