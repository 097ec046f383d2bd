"""The rankings bench.quality measured, kept in bench/.cache/rankings.json so that
`--report-only` and bench.quality.calibrate score them again without measuring."""

from __future__ import annotations

import json
from typing import Any

from bench.common.paths import CACHE

RANKINGS = CACHE / "rankings.json"


def stored() -> dict[str, Any]:
    return json.loads(RANKINGS.read_text()) if RANKINGS.exists() else {}


def keep(results: dict[str, Any]) -> None:
    RANKINGS.parent.mkdir(parents=True, exist_ok=True)
    RANKINGS.write_text(json.dumps(results), encoding="utf-8")
