"""The import benchmark: `python -m bench.importing --chunks 60000` (or 1000000). Writes one
account's sessions and chunks as an import file (and the same chunk rows as a COPY text
file), then measures side by side on the same server, each in a fresh database: the floor
(a raw COPY of the rows into a bare table, then one CREATE INDEX USING hnsw) and the product
(`similar-sessions import FILE` with default settings, its wall time and peak memory).
Writes bench/results/import-<size>.md (import-60k.md, import-1m.md; import-rebuilds-<size>.md
when the imports rebuild the own index). Never part of the test run."""

from __future__ import annotations

import argparse
import asyncio
import shutil
from dataclasses import replace
from pathlib import Path

from bench.common.databases import drop, recreate
from bench.common.paths import result, size_name
from bench.importing.corpus import write_files
from bench.importing.floor import ServerCpu, floor
from bench.importing.report import report
from bench.importing.runs import Run, compared, merged, migrate_db, product, split
from config.settings import Settings
from data.server import resolve_url

FLOOR_DB, PRODUCT_DB = "import_floor", "import"


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.importing", description=__doc__)
    parser.add_argument("--chunks", type=int, default=60_000)
    parser.add_argument("--dir", type=Path, default=Path("/tmp/similar-sessions-import-bench"))
    parser.add_argument("--keep", action="store_true", help="keep the files and databases")
    parser.add_argument(
        "--files", type=int, default=1, help="also import the rows cut into this many files"
    )
    parser.add_argument(
        "--db-prefix", default="bench_", help="prefix of the run's database names (bench_)"
    )
    args = parser.parse_args()
    floor_db, product_db = args.db_prefix + FLOOR_DB, args.db_prefix + PRODUCT_DB
    settings = Settings.from_env()
    # the product's imports read the setting from this environment: the report names it
    args.rebuilds = settings.import_rebuilds_own_index
    server_url = resolve_url(settings.database_url, settings.data_dir)
    cpu = ServerCpu(settings)
    args.dir.mkdir(parents=True, exist_ok=True)
    print(f"writing {args.chunks:,} chunks to {args.dir} ...")
    data_file, rows_file, columns = write_files(args.dir, args.chunks)
    size = data_file.stat().st_size
    print(f"  {data_file.name}: {size / 1024**2:,.0f} MB")
    try:
        floor_url = asyncio.run(recreate(server_url, floor_db))
        print("floor: COPY + CREATE INDEX ...")
        base = asyncio.run(floor(floor_url, rows_file, columns, args.chunks, cpu))
        print(f"  {base.copy_s:.1f} s + {base.index_s:.1f} s (+ {base.second_index_s:.1f} s)")
        asyncio.run(drop(server_url, floor_db))
        url = asyncio.run(recreate(server_url, product_db))
        migrate_db(url)
        runs: list[Run] = []
        for attempt in ("import", "again"):
            print(f"similar-sessions import ({attempt}) ...")
            runs.append(product(url, data_file, cpu))
            print(f"  {runs[-1].wall_s:.1f} s, peak RSS {runs[-1].peak_rss_mib:,.0f} MiB")
            print("  " + runs[-1].output)
        if args.files > 1:
            url = asyncio.run(recreate(server_url, product_db))
            migrate_db(url)
            for n, (part, chunks) in enumerate(split(data_file, args.files)):
                print(f"similar-sessions import {part.name} ({chunks:,} chunks) ...")
                run = replace(product(url, part, cpu), chunks=chunks)
                print(f"  {run.wall_s:.1f} s, {chunks / run.wall_s:,.0f} chunks/s")
                print("  " + run.output)
                if n:  # a later file: its rows are the own index's tail
                    tail_ms = compared(url)
                    run = replace(run, tail_ms=tail_ms, merge_s=merged(url))
                    run = replace(run, merged_ms=compared(url)[0])
                    print(
                        f"  comparison p50 with the tail {tail_ms[0]:.1f} ms (exact path "
                        f"{tail_ms[1]:.1f} ms); merge-indexes {run.merge_s:.1f} s; "
                        f"after it {run.merged_ms:.1f} ms"
                    )
                runs.append(run)
    finally:
        if not args.keep:
            asyncio.run(drop(server_url, floor_db))
            asyncio.run(drop(server_url, product_db))
            shutil.rmtree(args.dir, ignore_errors=True)
    text = report(args, size, base, runs)
    out = result("import-rebuilds" if args.rebuilds else "import", size_name(args.chunks))
    out.write_text(text, encoding="utf-8")
    print(text)
    print(f"written to {out}")


if __name__ == "__main__":
    main()
