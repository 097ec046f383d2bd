"""Band cut points per model: a calibrated family (fitted or not) gets its own, any other
identity the contract's; band() takes them."""

from __future__ import annotations

from resolvers.rules.calibration import (
    CALIBRATED,
    CONTRACT_CUTS,
    ProbeKind,
    cut_points,
    family_of,
)
from resolvers.rules.ranking import Band, band


def test_a_fitted_identity_takes_its_family_cut_points() -> None:
    family = "local:lexical-384@384"
    assert (family, ProbeKind.PASSAGE) in CALIBRATED
    calibrated = CALIBRATED[family, ProbeKind.PASSAGE].bands
    assert family_of("local:lexical-384.0c57631f@384") == family
    assert cut_points("local:lexical-384.0c57631f@384") == calibrated
    assert cut_points(family) == calibrated != CONTRACT_CUTS


def test_an_identity_without_a_calibration_keeps_the_contract_cut_points() -> None:
    assert cut_points("openai:text-embedding-3-small@1536") == CONTRACT_CUTS == (0.70, 0.50)
    assert family_of("local:all-minilm-l6-v2@384") == "local:all-minilm-l6-v2@384"


def test_band_uses_the_cut_points_it_is_given() -> None:
    cuts = cut_points("local:lexical-384.0c57631f@384")
    assert band(0.80) is Band.CLOSE  # the contract's 0.70
    assert band(0.80, cuts) is Band.RELATED
    assert band(cuts.close, cuts) is Band.CLOSE and band(cuts.related, cuts) is Band.RELATED
    assert band(cuts.related - 0.01, cuts) is Band.LOOSE
