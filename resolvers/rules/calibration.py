"""Floors and band cut points per model family and per kind of probe, calibrated on both
labelled corpora (docs/calibration.md): a passage of a session and a short search text are
different probes (a ten-word text against a passage of 384 tokens scores far lower than two
passages do). A model without a calibration keeps the contract's 0.35 floor and its 0.70 /
0.50 cut points."""

from __future__ import annotations

import re
from collections.abc import Iterable
from enum import StrEnum
from typing import NamedTuple

from resolvers.rules.ranking import (
    MIN_SIMILAR_SIMILARITY,
    SIMILARITY_BAND_CLOSE,
    SIMILARITY_BAND_RELATED,
)


class ProbeKind(StrEnum):
    PASSAGE = "passage"  # a session's own passage (similarSessions)
    TEXT = "text"  # a text an operator typed or pasted (searchSessions)


class BandCuts(NamedTuple):
    """Similarity at or above `close` is close, at or above `related` related."""

    close: float
    related: float


class Calibration(NamedTuple):
    """A model's floor for one kind of probe (no match below it) and its band cut points."""

    floor: float
    bands: BandCuts


CONTRACT_CUTS = BandCuts(SIMILARITY_BAND_CLOSE, SIMILARITY_BAND_RELATED)
CONTRACT = Calibration(MIN_SIMILAR_SIMILARITY, CONTRACT_CUTS)
# No floor at all: every passage, for the nearest offered when nothing passed the floor.
NO_FLOOR = -1.0

# Reproduce with `python -m bench.quality && python -m bench.quality.calibrate` (passages) and
# `python -m bench.search && python -m bench.search.calibrate` (texts); docs/calibration.md.
CALIBRATED: dict[tuple[str, ProbeKind], Calibration] = {
    ("local:lexical-384@384", ProbeKind.PASSAGE): Calibration(0.35, BandCuts(0.89, 0.35)),
    ("local:lexical-384@384", ProbeKind.TEXT): Calibration(0.04, BandCuts(0.41, 0.31)),
    # The text probes' floor, 0.48, is measured and not adopted: an operator's description is
    # farther from its task's passages than the first messages calibrated on, and at 0.48 the
    # dense leg alone found nothing for 3 of 50 (tau-bench) and 3 of 58 (coding-agents)
    # descriptions (docs/calibration.md). Its cut points are adopted.
    ("local:all-minilm-l6-v2@384", ProbeKind.TEXT): Calibration(
        MIN_SIMILAR_SIMILARITY, BandCuts(0.76, 0.75)
    ),
}


# A fitted model names its fit after a dot (`local:lexical-384.1a2b3c4d@384`); its cut points
# are its family's, calibrated over fits on both corpora.
_FIT = re.compile(r"\.[0-9a-f]{8}(?=@)")


def family_of(identity: str) -> str:
    """The identity without its fit, if it names one."""
    return _FIT.sub("", identity)


def calibration(identity: str | None, kind: ProbeKind = ProbeKind.PASSAGE) -> Calibration:
    """The calibrated floor and cut points of a model identity (or of its family) for a kind
    of probe, else the contract's."""
    if identity is None:
        return CONTRACT
    found = CALIBRATED.get((identity, kind)) or CALIBRATED.get((family_of(identity), kind))
    return found or CONTRACT


def cut_points(identity: str, kind: ProbeKind = ProbeKind.PASSAGE) -> BandCuts:
    """The band cut points of a model identity for a kind of probe."""
    return calibration(identity, kind).bands


def passage_floors(models: Iterable[object]) -> tuple[tuple[str, float], ...]:
    """Each model's calibrated floor for a session's passages (the contract's for a model
    without one), as a statement's lookups take them."""
    return tuple((str(m), calibration(str(m), ProbeKind.PASSAGE).floor) for m in models)
