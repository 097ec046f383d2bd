"""Where the benchmarks read and write: the checkout, bench/results/ and bench/.cache/."""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
RESULTS = ROOT / "bench" / "results"
CACHE = ROOT / "bench" / ".cache"  # gitignored (bench/.gitignore)


def checkout_env(env: dict[str, str]) -> dict[str, str]:
    """The environment for a product process the bench starts (`similar-sessions ...`): its
    imports resolve to this checkout's files, not to wherever the editable install points
    (a console script's sys.path starts with the venv's bin, not the working directory)."""
    path = env.get("PYTHONPATH")
    return {**env, "PYTHONPATH": str(ROOT) if not path else f"{ROOT}:{path}"}
