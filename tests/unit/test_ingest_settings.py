"""The receiver's settings beside the server's: each rate reads `off` as none, and a rate
that cannot be read names its variable (the two groups' validators are apart)."""

from __future__ import annotations

import pytest

from config.settings import Settings, SettingsError

RATES = ("RATE_LIMIT", "ACCOUNT_RATE_LIMIT", "INGEST_SPAN_RATE", "INGEST_BYTE_RATE")


@pytest.mark.parametrize("name", RATES)
def test_every_rate_reads_off_as_none(name: str) -> None:
    settings = Settings.from_env({f"SIMILAR_SESSIONS_{name}": "off"})
    assert getattr(settings, name.lower()) is None


@pytest.mark.parametrize("name", RATES)
def test_a_rate_that_cannot_be_read_names_its_variable(name: str) -> None:
    with pytest.raises(SettingsError, match=f"SIMILAR_SESSIONS_{name}"):
        Settings.from_env({f"SIMILAR_SESSIONS_{name}": "lots"})
