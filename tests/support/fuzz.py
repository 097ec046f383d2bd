"""How many examples a property test against the database runs: every one in CI (CI set,
as `.ci/run` runs), an eighth of them (at least 5) on a developer's machine, where the
database lane should take minutes, not tens of them."""

from __future__ import annotations

import os

IN_CI = os.environ.get("CI", "").lower() not in ("", "0", "false")


def examples(in_ci: int) -> int:
    return in_ci if IN_CI else max(5, in_ci // 8)
