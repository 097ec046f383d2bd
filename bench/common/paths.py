"""Where the benchmarks read and write: the checkout, bench/results/ and bench/.cache/."""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
RESULTS = ROOT / "bench" / "results"
CACHE = ROOT / "bench" / ".cache"  # gitignored (bench/.gitignore)
BOTH = "both"  # a result over the two labelled corpora, tau-bench and coding-agents


def result(kind: str, measured_on: str) -> Path:
    """A result file, named `<kind>-<corpus or size>.md` (bench/README.md): the kind of
    question, then the corpus the figures come from (tau-bench, coding-agents, both, demo,
    clustered) or the synthetic corpus's size (`size_name`)."""
    return RESULTS / f"{kind}-{measured_on}.md"


def corpus_name(corpus: str) -> str:
    """A `--corpus` option's value as a result's name says it: `all` is both corpora."""
    return BOTH if corpus == "all" else corpus


def size_name(chunks: int) -> str:
    """A corpus size as the result files name it: 1m, 100k, 60k (else the count itself)."""
    if chunks >= 1_000_000 and chunks % 1_000_000 == 0:
        return f"{chunks // 1_000_000}m"
    if chunks >= 1_000 and chunks % 1_000 == 0:
        return f"{chunks // 1_000}k"
    return str(chunks)


def checkout_env(env: dict[str, str]) -> dict[str, str]:
    """The environment for a product process the bench starts (`similar-sessions ...`): its
    imports resolve to this checkout's files, not to wherever the editable install points
    (a console script's sys.path starts with the venv's bin, not the working directory)."""
    path = env.get("PYTHONPATH")
    return {**env, "PYTHONPATH": str(ROOT) if not path else f"{ROOT}:{path}"}
