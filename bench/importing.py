"""The import benchmark: `python -m bench.importing --chunks 60000` (or 1000000). Writes one
account's sessions and chunks as an import file (and the same chunk rows as a COPY text
file), then measures side by side on the same server, each in a fresh database: the floor
(a raw COPY of the rows into a bare table, then one CREATE INDEX USING hnsw) and the product
(`similar-sessions import FILE` with default settings, its wall time and peak memory).
Writes bench/results/import-<chunks>.md. Never part of the test run."""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import resource
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from bench.import_corpus import write_files
from bench.import_floor import Floor, ServerCpu, drop, floor, recreate
from bench.measure import ROOT
from config.settings import Settings
from data.engine import make_engine
from data.migrate import migrate
from data.server import resolve_url

CLI = Path(sys.executable).with_name("similar-sessions")
FLOOR_DB, PRODUCT_DB = "bench_import_floor", "bench_import"


@dataclass
class Run:
    wall_s: float
    cpu_s: float | None  # the import process and the server
    peak_rss_mib: float
    phases: dict[str, float]
    output: str


def product(url: str, data_file: Path, cpu: ServerCpu) -> Run:
    """`similar-sessions import FILE` in a process of its own, default settings."""
    env = {**os.environ, "DATABASE_URL": url, "SIMILAR_SESSIONS_LOG_LEVEL": "INFO"}
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    before, client_before, server_before = usage.ru_maxrss, _cpu(usage), cpu.seconds()
    started = time.perf_counter()
    done = subprocess.run(
        [str(CLI), "import", str(data_file)], env=env, capture_output=True, text=True
    )
    wall = time.perf_counter() - started
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    peak, server_after = usage.ru_maxrss, cpu.seconds()
    spent = None
    if server_after is not None and server_before is not None:
        spent = _cpu(usage) - client_before + server_after - server_before
    if done.returncode != 0:
        raise SystemExit(f"import failed ({done.returncode}):\n{done.stderr[-3000:]}")
    phases: dict[str, float] = {}
    for line in done.stderr.splitlines():
        if line.startswith("{") and '"imported"' in line:
            phases = json.loads(line).get("seconds", {})
    summary = [line for line in done.stderr.splitlines() if not line.startswith("{")]
    rss = max(peak, before) / 1024  # ru_maxrss is in KiB on Linux
    return Run(wall, spent, rss, phases, "\n".join(summary))


def _cpu(usage: resource.struct_rusage) -> float:
    return usage.ru_utime + usage.ru_stime


def migrate_db(url: str) -> None:
    async def run() -> None:
        engine = make_engine(url)
        try:
            await migrate(engine)
        finally:
            await engine.dispose()

    asyncio.run(run())


def _s(value: float | None) -> str:
    return "n/a" if value is None else f"{value:,.1f} s"


def split(data_file: Path, parts: int) -> list[Path]:
    """The file cut into parts of about equal lines, in order (a session before its chunks)."""
    lines = data_file.read_bytes().splitlines(keepends=True)
    size = -(-len(lines) // parts)
    paths = []
    for n in range(parts):
        path = data_file.with_suffix(f".part{n}.jsonl")
        path.write_bytes(b"".join(lines[n * size : (n + 1) * size]))
        paths.append(path)
    return paths


def report(args: argparse.Namespace, size: int, base: Floor, runs: list[Run]) -> str:
    first, again, *parts = runs
    two = base.total_s + base.second_index_s
    phases = ", ".join(f"{k} {v:,.1f} s" for k, v in first.phases.items())
    one_cpu, two_cpu = (base.cpu_s[1], base.cpu_s[2]) if base.cpu_s else (None, None)

    def ratio(over: float | None) -> str:
        return "n/a" if first.cpu_s is None or not over else f"{first.cpu_s / over:.2f}x"

    return "\n".join(
        [
            f"# Import of {args.chunks:,} chunks ({size / 1024**2:,.0f} MB, one account)",
            "",
            f"`python -m bench.importing --chunks {args.chunks}`: one run on this 2-core "
            "machine, shared with other work, so wall times carry the neighbours' load; CPU "
            "seconds (the import process and every server process) carry only the work. Each "
            "side in a fresh database on the same server.",
            "",
            "| measure | wall | CPU |",
            "|---|---|---|",
            f"| floor: raw COPY of the chunk rows | {_s(base.copy_s)} "
            f"| {_s(base.cpu_s[0] if base.cpu_s else None)} |",
            f"| floor: CREATE INDEX USING hnsw | {_s(base.index_s)} | |",
            f"| **floor: COPY + one index** | **{_s(base.total_s)}** | {_s(one_cpu)} |",
            f"| floor: a second index on the same rows | {_s(base.second_index_s)} | |",
            f"| floor: COPY + both indexes the product keeps | {_s(two)} | {_s(two_cpu)} |",
            f"| **`similar-sessions import FILE`** (process start to exit) "
            f"| **{_s(first.wall_s)}** | {_s(first.cpu_s)} |",
            f"| import / (COPY + one index) | {first.wall_s / base.total_s:.2f}x "
            f"| {ratio(one_cpu)} |",
            f"| import / (COPY + both indexes) | {first.wall_s / two:.2f}x | {ratio(two_cpu)} |",
            f"| import phases | {phases} | |",
            f"| import rate | {args.chunks / first.wall_s:,.0f} chunks/s | |",
            f"| import peak RSS | {first.peak_rss_mib:,.0f} MiB | |",
            f"| the same file again (changes nothing) | {_s(again.wall_s)} | {_s(again.cpu_s)} |",
            *(
                [
                    f"| the same rows in {len(parts)} files, one after the other (a fresh "
                    f"database) | {_s(sum(r.wall_s for r in parts))} | "
                    f"{_s(sum(r.cpu_s or 0 for r in parts))} |",
                    "| ... each file | " + ", ".join(f"{r.wall_s:,.1f} s" for r in parts) + " | |",
                ]
                if parts
                else []
            ),
            "",
            "The product keeps two HNSW graphs over these rows (the model's shared index and the"
            " account's own, data/model_indexes.py and data/account_indexes.py); the issue's"
            " floor builds one.",
            "",
        ]
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--chunks", type=int, default=60_000)
    parser.add_argument("--dir", type=Path, default=Path("/tmp/similar-sessions-import-bench"))
    parser.add_argument("--keep", action="store_true", help="keep the files and databases")
    parser.add_argument(
        "--files", type=int, default=1, help="also import the rows cut into this many files"
    )
    args = parser.parse_args()
    settings = Settings.from_env()
    server_url = resolve_url(settings.database_url, settings.data_dir)
    cpu = ServerCpu(settings)
    args.dir.mkdir(parents=True, exist_ok=True)
    print(f"writing {args.chunks:,} chunks to {args.dir} ...")
    data_file, rows_file, columns = write_files(args.dir, args.chunks)
    size = data_file.stat().st_size
    print(f"  {data_file.name}: {size / 1024**2:,.0f} MB")
    try:
        floor_url = asyncio.run(recreate(server_url, FLOOR_DB))
        print("floor: COPY + CREATE INDEX ...")
        base = asyncio.run(floor(floor_url, rows_file, columns, args.chunks, cpu))
        print(f"  {base.copy_s:.1f} s + {base.index_s:.1f} s (+ {base.second_index_s:.1f} s)")
        asyncio.run(drop(server_url, FLOOR_DB))
        url = asyncio.run(recreate(server_url, PRODUCT_DB))
        migrate_db(url)
        runs: list[Run] = []
        for attempt in ("import", "again"):
            print(f"similar-sessions import ({attempt}) ...")
            runs.append(product(url, data_file, cpu))
            print(f"  {runs[-1].wall_s:.1f} s, peak RSS {runs[-1].peak_rss_mib:,.0f} MiB")
            print("  " + runs[-1].output)
        if args.files > 1:
            url = asyncio.run(recreate(server_url, PRODUCT_DB))
            migrate_db(url)
            for part in split(data_file, args.files):
                print(f"similar-sessions import {part.name} ...")
                runs.append(product(url, part, cpu))
                print(f"  {runs[-1].wall_s:.1f} s")
    finally:
        if not args.keep:
            asyncio.run(drop(server_url, FLOOR_DB))
            asyncio.run(drop(server_url, PRODUCT_DB))
            shutil.rmtree(args.dir, ignore_errors=True)
    text = report(args, size, base, runs)
    out = ROOT / "bench" / "results" / f"import-{args.chunks}.md"
    out.write_text(text, encoding="utf-8")
    print(text)
    print(f"written to {out}")


if __name__ == "__main__":
    main()
