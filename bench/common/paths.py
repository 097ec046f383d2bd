"""Where the benchmarks read and write: the checkout, bench/results/ and bench/.cache/."""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
RESULTS = ROOT / "bench" / "results"
CACHE = ROOT / "bench" / ".cache"  # gitignored (bench/.gitignore)
