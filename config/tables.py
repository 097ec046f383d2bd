"""The configuration tables of docs/configuration.md, generated from the settings' declarations.

python -m config.tables      # prints both tables
"""

from __future__ import annotations

import json
from typing import Any

from config.settings import GROUPS, Settings, env_name


def _shown(default: Any) -> str:
    if isinstance(default, bool):
        return "true" if default else "false"
    if isinstance(default, dict):
        return json.dumps(default)
    if isinstance(default, tuple):
        return ",".join(default)
    return str(default)


def table(group: str) -> str:
    """The markdown table of one group of settings, in declaration order."""
    rows = ["| variable | default | what it does |", "|---|---|---|"]
    for name, field in Settings.model_fields.items():
        extra = field.json_schema_extra if isinstance(field.json_schema_extra, dict) else {}
        if extra.get("group") != group:
            continue
        shown = extra.get("shown_default", _shown(field.default))
        rows.append(f"| `{env_name(name)}` | `{shown}` | {field.description} |")
    return "\n".join(rows)


def marked(group: str) -> str:
    """The table between the markers of docs/configuration.md that keep it in step with
    the declarations."""
    return f"<!-- settings:{group} -->\n{table(group)}\n<!-- /settings:{group} -->"


if __name__ == "__main__":
    for group in GROUPS:
        print(marked(group), end="\n\n")
