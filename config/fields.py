"""What every settings group shares: where the repository is, the variables' prefix, the
groups of docs/configuration.md, and `setting()`, one field's default, bounds and
description."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

from limits import parse_many
from pydantic import Field

REPO_ROOT = Path(__file__).resolve().parents[1]
ENV_PREFIX = "SIMILAR_SESSIONS_"
Group = Literal["server", "ingest", "indexer", "providers", "observability", "alerts"]
GROUPS: tuple[Group, ...] = (
    "server",
    "ingest",
    "indexer",
    "providers",
    "observability",
    "alerts",
)


def rate_or_none(value: str | None) -> str | None:
    """A rate in `limits` notation as a setting takes it: `off` (or empty, `none`, `0`) is
    None; a string `limits` cannot read is a ValueError naming it."""
    if value is None or value.strip().lower() in {"", "off", "none", "0"}:
        return None
    parse_many(value)
    return value.strip()


def setting(default: Any, description: str, group: Group = "server", **bounds: Any) -> Any:
    """A field with its default, bounds and the description docs/configuration.md's tables show."""
    return Field(default, description=description, json_schema_extra={"group": group}, **bounds)
