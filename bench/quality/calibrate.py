"""Band cut points per model family from the served rankings bench.quality kept: the lowest
`close` whose neighbours share the task at least 90% of the time, and the lowest `related`
whose band below it does at least 60%, on each corpus and on each half of its tasks (a
subset showing fewer than 20 neighbours in a band is too small to judge).

    python -m bench.quality && python -m bench.quality.calibrate [--out docs/calibration.md]

Prints the CALIBRATED entries for resolvers/rules/calibration.py and writes the table."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from bench.common.paths import ROOT
from bench.quality.rankings import stored
from bench.quality.scoring import K, task_half
from resolvers.rules.calibration import BandCuts, family_of

CLOSE_PRECISION = 0.90
RELATED_PRECISION = 0.60
MIN_SHOWN = 20  # a subset showing fewer neighbours in a band is too small to judge it
GRID = [round(0.35 + i / 100, 2) for i in range(66)]  # 0.35 .. 1.00
OUT = ROOT / "docs" / "calibration.md"
PageDetails = list[tuple[float, bool, str]]  # (similarity, same task, task) of a top-5 neighbour


def shown_by_family(results: dict[str, Any]) -> dict[str, dict[str, PageDetails]]:
    """family -> corpus -> every top-5 neighbour the served ranking showed."""
    out: dict[str, dict[str, PageDetails]] = {}
    for corpus, data in results.items():
        task = data["task"]
        for row in data["rows"]:
            if row["method"] != "served":
                continue
            pairs = [
                (sim, task[other] == task[sid], task[sid])
                for sid, neighbours in row["ranking"].items()
                for other, sim in neighbours[:K]
            ]
            out.setdefault(family_of(row["model"]), {})[corpus] = pairs
    return out


def precision(pairs: PageDetails, keep: Callable[[float], bool]) -> tuple[float | None, int]:
    sel = [same for sim, same, _ in pairs if keep(sim)]
    return (sum(sel) / len(sel) if sel else None, len(sel))


def meets(subsets: list[PageDetails], keep: Callable[[float], bool], target: float) -> bool:
    for subset in subsets:
        p, n = precision(subset, keep)
        if p is not None and n >= MIN_SHOWN and p < target:
            return False
    return True


def at_least(cut: float) -> Callable[[float], bool]:
    """Whether a similarity is at or above the cut."""
    return lambda similarity: similarity >= cut


def between(low: float, high: float) -> Callable[[float], bool]:
    """Whether a similarity is in [low, high): the band below high."""
    return lambda similarity: low <= similarity < high


def choose(subsets: list[PageDetails]) -> BandCuts:
    """The lowest cut points that meet both targets on every subset."""
    close = next((c for c in GRID if meets(subsets, at_least(c), CLOSE_PRECISION)), 1.0)
    related = next(
        (r for r in GRID if r <= close and meets(subsets, between(r, close), RELATED_PRECISION)),
        close,
    )
    return BandCuts(close, related)


def cell(pairs: PageDetails, keep: Callable[[float], bool]) -> str:
    p, n = precision(pairs, keep)
    return "-" if p is None else f"{p:.0%} ({n})"


def render(
    found: dict[str, dict[str, PageDetails]], complete: set[str]
) -> tuple[str, dict[str, BandCuts]]:
    lines = [
        "| model family | close | related | corpus | close: same task (shown) "
        "| related: same task (shown) | held out: close / related |",
        "|---|---|---|---|---|---|---|",
    ]
    chosen: dict[str, BandCuts] = {}
    for family, corpora in sorted(found.items()):
        subsets = [
            [p for p in pairs if task_half(p[2]) == h] for pairs in corpora.values() for h in (0, 1)
        ]
        cuts = chosen[family] = choose(subsets)
        for corpus, pairs in corpora.items():
            # cut points chosen on the other half of every corpus's tasks, scored on this one
            held = []
            for h in (0, 1):
                other = choose([[p for p in ps if task_half(p[2]) != h] for ps in corpora.values()])
                mine = [p for p in pairs if task_half(p[2]) == h]
                held.append(
                    cell(mine, at_least(other.close))
                    + " / "
                    + cell(mine, between(other.related, other.close))
                )
            label = family if family in complete else f"{family} (not adopted: one corpus)"
            lines.append(
                f"| {label} | {cuts.close:.2f} | {cuts.related:.2f} | {corpus} "
                f"| {cell(pairs, at_least(cuts.close))} "
                f"| {cell(pairs, between(cuts.related, cuts.close))} "
                f"| {'; '.join(held)} |"
            )
    return "\n".join(lines), chosen


def main(argv: list[str] | None = None) -> int:
    args = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    args.add_argument("--out", default=str(OUT))
    opts = args.parse_args(argv)
    results = stored()
    if not results:
        print("no rankings kept: run `python -m bench.quality` first", file=sys.stderr)
        return 1
    found = shown_by_family(results)
    complete = {f for f, corpora in found.items() if set(corpora) == set(results)}
    table, chosen = render(found, complete)
    text = TEMPLATE.format(table=table, close=CLOSE_PRECISION, related=RELATED_PRECISION)
    Path(opts.out).write_text(text, encoding="utf-8")
    print(table)
    print("\nCALIBRATED = {")
    for family, cuts in chosen.items():
        if family in complete:
            print(
                f'    ("{family}", ProbeKind.PASSAGE): '
                f"Calibration(0.35, BandCuts({cuts.close:.2f}, {cuts.related:.2f})),"
            )
    print("}")
    for family in sorted(set(chosen) - complete):
        print(f"not calibrated (not measured on every corpus): {family}", file=sys.stderr)
    return 0


TEMPLATE = """# Band cut points per model

A similarity means something different under each model: MiniLM puts nearly every pair of
one domain above 0.70, the fitted lexical model rarely does. So the band words (close,
related, loose) use cut points calibrated per model family on both labelled corpora
(tau-bench airline, coding-agents), from the neighbours the served ranking shows (the top
5 of every session, through the product's own pipeline):

- close: the lowest cut point at which the neighbours shown at or above it share the task
  at least {close:.0%} of the time, on each corpus and on each half of its tasks (a subset
  showing fewer than 20 neighbours in the band is too small to judge, and is not);
- related: the lowest cut point at which the band between it and the close cut point does
  at least {related:.0%}, under the same rule (when no cut point does, the band is empty);
- a model without a calibration (vectors imported under another identity) keeps the
  contract's 0.70 / 0.50.

A fitted lexical identity (`local:lexical-384.<fit>@384`) takes its family's cut points.
A family measured on one corpus only is shown but not adopted: no default from one corpus.
The held-out column chooses cut points on one half of every corpus's tasks and scores them
on the other half (half 0; half 1), a check that they are not fitted to the tasks they were
chosen on.

{table}

Reproduce: `python -m bench.quality && python -m bench.quality.calibrate` (writes this page and
prints the `CALIBRATED` entries of `resolvers/rules/calibration.py`).
"""


if __name__ == "__main__":
    sys.exit(main())
