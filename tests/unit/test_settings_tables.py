"""docs/configuration.md's settings tables are the ones the settings' declarations generate."""

from __future__ import annotations

from pathlib import Path

import pytest

from config.settings import GROUPS, Settings
from config.tables import marked
from data.ef_fits import FIT_CANDIDATES

CONFIGURATION = Path(__file__).resolve().parents[2] / "docs" / "configuration.md"


@pytest.mark.parametrize("group", GROUPS)
def test_the_configuration_page_shows_the_declared_settings(group: str) -> None:
    assert marked(group) in CONFIGURATION.read_text(encoding="utf-8"), (
        f"docs/configuration.md's {group} settings table drifted: paste `python -m config.tables`"
    )


def test_the_fitted_ef_search_setting_names_the_candidates_the_fit_tries() -> None:
    """The setting's description (and so this page) says which ef_search values a build tries:
    data/ef_fits.FIT_CANDIDATES, spelled out, since config/ imports nothing of the product."""
    *most, last = (str(ef) for ef in FIT_CANDIDATES)
    spelled = f"the lowest of {', '.join(most)} and {last} whose"
    described = Settings.model_fields["hnsw_ef_search_fitted"].description or ""
    assert spelled in described, f"{described!r} should name {FIT_CANDIDATES}"
