"""What reading one long `--format messages` line costs: a line of N short messages is
written to a file, then read by the format's reader in a fresh process, which prints its
peak resident memory against the line's size (the database is not involved: the rows go
to the stage a batch at a time).

    python -m bench.importing.messages_line [--messages 1000000]
"""

from __future__ import annotations

import argparse
import resource
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

from transfer.formats import messages


def write_line(path: Path, count: int) -> None:
    """One session of `count` messages, user and assistant in turn, written a piece at a time."""
    with path.open("w") as out:
        out.write('{"session_id": "long", "messages": [')
        for n in range(count):
            role = "user" if n % 2 == 0 else "assistant"
            out.write(("" if n == 0 else ", ") + f'{{"role": "{role}", "content": "m{n}"}}')
        out.write("]}\n")


def read_line(path: Path) -> None:
    raw = path.read_bytes()
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    started = time.perf_counter()
    records = sum(1 for _ in messages.parse(raw, uuid.uuid4()))
    seconds = time.perf_counter() - started
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"| {len(raw) / 1e6:.1f} MB | {records:,} | {seconds:.1f} | {before:.0f} | {peak:.0f} |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--messages", type=int, default=1_000_000)
    parser.add_argument("--read", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.read is not None:
        read_line(args.read)
        return
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "line.jsonl"
        write_line(path, args.messages)
        print("| line | records | read, s | RSS with the line read, MB | peak RSS, MB |")
        print("|---|---|---|---|---|")
        command = [sys.executable, "-m", "bench.importing.messages_line", "--read", str(path)]
        subprocess.run(command, check=True)


if __name__ == "__main__":
    main()
