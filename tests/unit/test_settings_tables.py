"""docs/configuration.md's settings tables are the ones the settings' declarations generate."""

from __future__ import annotations

from pathlib import Path

import pytest

from config.settings import GROUPS
from config.tables import marked

CONFIGURATION = Path(__file__).resolve().parents[2] / "docs" / "configuration.md"


@pytest.mark.parametrize("group", GROUPS)
def test_the_configuration_page_shows_the_declared_settings(group: str) -> None:
    assert marked(group) in CONFIGURATION.read_text(encoding="utf-8"), (
        f"docs/configuration.md's {group} settings table drifted: paste `python -m config.tables`"
    )
