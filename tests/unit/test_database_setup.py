"""Connection strings, settings, and the pgvector version check."""

import pytest

from config.settings import Settings, SettingsError
from data.migrate import check_vector_version
from data.server import DatabaseUnavailable, async_url


@pytest.mark.parametrize(
    ("given", "expected"),
    [
        (
            "postgresql://postgres:@/db?host=/tmp/pg",
            "postgresql+asyncpg://postgres:@/db?host=%2Ftmp%2Fpg",
        ),
        ("postgres://u:p@localhost:5433/db", "postgresql+asyncpg://u:p@localhost:5433/db"),
        ("postgresql+psycopg://u@h/db?sslmode=disable", "postgresql+asyncpg://u@h/db"),
    ],
)
def test_tcp_and_unix_socket_urls_become_asyncpg_urls(given: str, expected: str) -> None:
    assert async_url(given) == expected


def test_a_non_postgres_url_is_refused_by_name() -> None:
    with pytest.raises(DatabaseUnavailable, match="postgresql://"):
        async_url("mysql://x@y/z")


@pytest.mark.parametrize("version", ["0.7.4", "0.5.0"])
def test_pgvector_older_than_0_8_is_refused(version: str) -> None:
    with pytest.raises(DatabaseUnavailable, match=r"0\.8 or newer"):
        check_vector_version(version)


@pytest.mark.parametrize("version", ["0.8.0", "0.8.6", "1.0.0"])
def test_pgvector_0_8_and_newer_is_accepted(version: str) -> None:
    check_vector_version(version)


def test_settings_name_the_bad_variable() -> None:
    with pytest.raises(SettingsError, match="SIMILAR_SESSIONS_POOL_SIZE"):
        Settings.from_env({"SIMILAR_SESSIONS_POOL_SIZE": "many"})
    with pytest.raises(SettingsError, match="SIMILAR_SESSIONS_EMBEDDINGS"):
        Settings.from_env({"SIMILAR_SESSIONS_EMBEDDINGS": "perhaps"})
