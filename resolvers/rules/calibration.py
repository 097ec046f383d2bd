"""Band cut points per model identity, calibrated on the labelled corpora
(docs/calibration.md); a model without a calibration keeps the contract's 0.70 / 0.50."""

from __future__ import annotations

import re
from typing import NamedTuple

from resolvers.rules.ranking import SIMILARITY_BAND_CLOSE, SIMILARITY_BAND_RELATED


class BandCuts(NamedTuple):
    """Similarity at or above `close` is close, at or above `related` related."""

    close: float
    related: float


CONTRACT_CUTS = BandCuts(SIMILARITY_BAND_CLOSE, SIMILARITY_BAND_RELATED)

# Reproduce with `python -m bench.calibrate` (see docs/calibration.md).
CALIBRATED: dict[str, BandCuts] = {
    "local:lexical-384@384": BandCuts(0.89, 0.35),
}


# A fitted model names its fit after a dot (`local:lexical-384.1a2b3c4d@384`); its cut points
# are its family's, calibrated over fits on both corpora.
_FIT = re.compile(r"\.[0-9a-f]{8}(?=@)")


def family_of(identity: str) -> str:
    """The identity without its fit, if it names one."""
    return _FIT.sub("", identity)


def cut_points(identity: str) -> BandCuts:
    """The calibrated cut points of a model identity (or of its family), else the contract's."""
    return CALIBRATED.get(identity) or CALIBRATED.get(family_of(identity), CONTRACT_CUTS)
