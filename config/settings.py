"""Settings: one declaration per setting (default, bounds, description), read once from the
environment when the app or a command starts. Each group declares its own in a module of its
own; `Settings` is all of them."""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

from pydantic import ValidationError, field_validator
from pydantic_settings import SettingsConfigDict

from config.alerts import AlertSettings
from config.fields import ENV_PREFIX, GROUPS, REPO_ROOT, Group, setting
from config.indexer import IndexerSettings
from config.ingest import IngestSettings
from config.observability import ObservabilitySettings
from config.providers import ProviderSettings
from config.server import ServerSettings

__all__ = ["GROUPS", "REPO_ROOT", "Group", "Settings", "SettingsError", "default_of", "setting"]


class SettingsError(ValueError):
    """An environment variable holds a value the product cannot use."""


class Settings(
    AlertSettings,
    ObservabilitySettings,
    ProviderSettings,
    IndexerSettings,
    IngestSettings,
    ServerSettings,
):
    """Everything configurable, the groups in docs/configuration.md's order (server first); its
    configuration tables are generated from it."""

    model_config = SettingsConfigDict(
        env_prefix=ENV_PREFIX, frozen=True, extra="ignore", validate_by_name=True
    )

    @field_validator("database_url", "openai_base_url", "otel_exporter_otlp_endpoint")
    @classmethod
    def _unset_when_empty(cls, value: str | None) -> str | None:
        return value or None

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> Settings:
        """The settings from `environ` (the process environment by default); an unusable
        value raises SettingsError naming its variable."""
        env = os.environ if environ is None else environ
        values = {
            name: env[variable]
            for name, variable in ENV_NAMES.items()
            if env.get(variable, "") != ""
        }
        try:
            return cls.model_validate(values)
        except ValidationError as exc:
            raise SettingsError(_describe(exc)) from None


def env_name(name: str) -> str:
    alias = Settings.model_fields[name].validation_alias
    return alias if isinstance(alias, str) else ENV_PREFIX + name.upper()


ENV_NAMES = {name: env_name(name) for name in Settings.model_fields}


def default_of(name: str) -> Any:
    """A setting's declared default: the one place other modules take their defaults from."""
    return Settings.model_fields[name].default


def _describe(exc: ValidationError) -> str:
    first = exc.errors(include_url=False)[0]
    name = str(first["loc"][0]) if first["loc"] else ""
    variable = ENV_NAMES.get(name, name)
    return f"{variable}: {first['msg']}, got {first.get('input')!r}"
