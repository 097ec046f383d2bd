"""Band cut points per model: a calibrated family (fitted or not) gets its own, any other
identity the contract's; band() takes them."""

from __future__ import annotations

from resolvers.rules.calibration import (
    CALIBRATED,
    CONTRACT,
    CONTRACT_CUTS,
    ProbeKind,
    calibration,
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


def test_a_search_text_has_its_own_floor_and_cut_points() -> None:
    fitted = "local:lexical-384.0c57631f@384"
    passage, text = calibration(fitted, ProbeKind.PASSAGE), calibration(fitted, ProbeKind.TEXT)
    # a short text against a long passage scores far lower than two passages do
    assert text.floor < passage.floor and text.bands != passage.bands
    assert text == CALIBRATED["local:lexical-384@384", ProbeKind.TEXT]
    assert text.bands.related >= text.floor and passage.bands.related >= passage.floor


def test_each_kind_of_probe_falls_back_to_the_contract_on_its_own() -> None:
    minilm = "local:all-minilm-l6-v2@384"
    assert calibration(minilm, ProbeKind.TEXT) == CALIBRATED[minilm, ProbeKind.TEXT] != CONTRACT
    assert calibration(minilm, ProbeKind.TEXT).bands != CONTRACT_CUTS
    assert calibration(minilm, ProbeKind.PASSAGE) == CONTRACT  # its passages: not calibrated
    hosted = "openai:text-embedding-3-small@1536"
    assert calibration(hosted, ProbeKind.TEXT) == calibration(hosted) == CONTRACT
    assert calibration(None, ProbeKind.TEXT) == CONTRACT
    assert CONTRACT.floor == 0.35
