"""The README's configuration tables are the ones the settings' declarations generate."""

from __future__ import annotations

from pathlib import Path

import pytest

from config.settings import GROUPS
from config.tables import marked

README = Path(__file__).resolve().parents[2] / "README.md"


@pytest.mark.parametrize("group", GROUPS)
def test_the_readme_shows_the_declared_settings(group: str) -> None:
    assert marked(group) in README.read_text(encoding="utf-8"), (
        f"README's {group} settings table drifted: paste `python -m config.tables`"
    )
