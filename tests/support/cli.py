"""The command line as an operator runs it: a process of its own, its exit code and stderr."""

from __future__ import annotations

import subprocess
import sys


def run_import(database_url: str, *args: str) -> subprocess.CompletedProcess[str]:
    """`similar-sessions import ARGS...` against the database, its output captured."""
    return subprocess.run(
        [sys.executable, "-m", "similar_sessions.cli", "import", *args],
        env={"DATABASE_URL": database_url, "PATH": "/usr/bin:/bin"},
        capture_output=True,
        text=True,
        timeout=120,
    )
