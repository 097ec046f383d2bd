"""Band cut points per model identity, calibrated on the labelled corpora
(docs/calibration.md); a model without a calibration keeps the contract's 0.70 / 0.50."""

from __future__ import annotations

from typing import NamedTuple

from resolvers.ranking import SIMILARITY_BAND_CLOSE, SIMILARITY_BAND_RELATED


class BandCuts(NamedTuple):
    """Similarity at or above `close` is close, at or above `related` related."""

    close: float
    related: float


CONTRACT_CUTS = BandCuts(SIMILARITY_BAND_CLOSE, SIMILARITY_BAND_RELATED)

# Reproduce with `python -m bench.calibrate` (see docs/calibration.md).
CALIBRATED: dict[str, BandCuts] = {}


def cut_points(identity: str) -> BandCuts:
    """The calibrated cut points of a model identity, else the contract's."""
    return CALIBRATED.get(identity, CONTRACT_CUTS)
