"""What masking credentials costs and finds on the shipped corpora: the credentials found
per corpus and kind (every one of them is a false alarm or a real credential to read), and
the time to mask, against the time to count the same texts' lexical features.

    python -m bench.credentials [--repeat 3]
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from collections import Counter
from collections.abc import Callable, Sequence
from pathlib import Path

from indexer.lexical import features
from values import credentials

DATA = Path(__file__).resolve().parents[2] / "shared" / "data"


def corpora() -> dict[str, list[str]]:
    """Every message text of the two corpora."""
    airline = json.loads((DATA / "tau-bench-airline-gpt4o.json").read_text())
    tau = [m["content"] for s in airline for m in s["traj"] if isinstance(m.get("content"), str)]
    coding = []
    with (DATA / "coding-agents" / "sessions.jsonl").open() as lines:
        for line in lines:
            messages = json.loads(line)["messages"]
            coding += [m["content"] for m in messages if isinstance(m.get("content"), str)]
    return {"tau-bench airline": tau, "coding agents": coding}


def _median_s(run: Callable[[str], object], texts: Sequence[str], repeat: int) -> float:
    times = []
    for _ in range(repeat):
        started = time.perf_counter()
        for text in texts:
            run(text)
        times.append(time.perf_counter() - started)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    repeat = parser.parse_args().repeat
    print("| corpus | texts | MB | found (by kind) | find, MB/s | features, MB/s |")
    print("|---|---|---|---|---|---|")
    for name, texts in corpora().items():
        size = sum(len(t) for t in texts) / 1e6
        kinds = Counter(f.kind for t in texts for f in credentials.found(t))
        find = _median_s(credentials.found, texts, repeat)
        # features() leaves credentials out first: its time here includes a find.
        counted = _median_s(features, texts, repeat)
        listed = ", ".join(f"{k} {n}" for k, n in kinds.most_common()) or "none"
        print(
            f"| {name} | {len(texts):,} | {size:.1f} | {listed} | {size / find:.1f} "
            f"| {size / counted:.1f} |"
        )


if __name__ == "__main__":
    main()
