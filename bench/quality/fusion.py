"""Would fusing two models help `similarSessions`? The served rankings bench.quality kept,
under the fitted lexical model and under MiniLM, fused by reciprocal rank (k 60, the
search's fusion, and with the lexical leg weighted twice), scored as bench.quality scores
them: P@1, P@5 and cross-agent P@5, same task = relevant.

    python -m bench.quality && python -m bench.quality.fusion

The product adopts a fusion only where it lowers P@5 on neither corpus (issue #26)."""

from __future__ import annotations

import sys
from collections.abc import Sequence
from typing import Any
from uuid import UUID

from bench.quality.rankings import stored
from bench.quality.scoring import TOP, Ranking, score
from resolvers.rules.calibration import CONTRACT_CUTS
from resolvers.rules.fusion import reciprocal_rank_fusion


def served(data: dict[str, Any], family: str) -> Ranking:
    """The served ranking of the model whose identity names the family."""
    for row in data["rows"]:
        if row["method"] == "served" and family in row["model"]:
            return {
                UUID(s): [(UUID(o), sim) for o, sim in neighbours]
                for s, neighbours in row["ranking"].items()
            }
    raise LookupError(f"no served ranking of {family}: run `python -m bench.quality` first")


def fused(legs: Sequence[Ranking], weights: Sequence[float]) -> Ranking:
    """Each session's neighbours as the legs' orders fused by reciprocal rank."""
    out: Ranking = {}
    for session in legs[0]:
        orders = [[other for other, _ in leg.get(session, [])] for leg in legs]
        out[session] = [
            (f.session_id, f.score) for f in reciprocal_rank_fusion(orders, weights=weights)
        ][:TOP]
    return out


def rows(results: dict[str, Any]) -> list[str]:
    lines = [
        "| corpus | ranking | P@1 | P@5 | cross-agent P@5 |",
        "|---|---|---|---|---|",
    ]
    for corpus, data in results.items():
        task = {UUID(k): v for k, v in data["task"].items()}
        agent = {UUID(k): v for k, v in data["agent"].items()}
        lexical, minilm = served(data, "lexical-384"), served(data, "all-minilm-l6-v2")
        for name, ranking in (
            ("lexical, served", lexical),
            ("MiniLM, served", minilm),
            ("reciprocal-rank fusion (k 60)", fused([lexical, minilm], [1.0, 1.0])),
            ("reciprocal-rank fusion, lexical weighted 2", fused([lexical, minilm], [2.0, 1.0])),
        ):
            s = score(name, ranking, task, agent, CONTRACT_CUTS)
            cross = "-" if s.cross_p_at_5 is None else f"{s.cross_p_at_5:.3f}"
            lines.append(f"| {corpus} | {name} | {s.p_at_1:.3f} | {s.p_at_5:.3f} | {cross} |")
    return lines


def main() -> int:
    results = stored()
    if not results:
        print("no rankings kept: run `python -m bench.quality` first", file=sys.stderr)
        return 1
    print("\n".join(rows(results)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
