"""How long the demo's first load takes to index, by how MiniLM runs: the product's int8 ONNX
build against torch, idle and beside one CPU-bound process (issue #38). Each load is the
code `similar-sessions demo` runs (`load_demo`: the import, then one indexer pass over
the account), into a fresh database, the vectors embedded afresh (no cache). The lexical
load alone is timed the same way; the dense index's time is the difference.

    python -m bench.search.indexing [--out FILE]

Writes bench/results/search-indexing-demo.md unless `--out` says. MiniLM under torch needs
the install bench/common/torch_minilm.py names (INSTALL); without it, its rows are left out."""

from __future__ import annotations

import argparse
import asyncio
import sys
import time
from collections.abc import Sequence

from bench.common.databases import drop, recreate
from bench.common.load import busy_processes
from bench.common.paths import result
from bench.common.torch_minilm import INSTALL, torch_installed, torch_version
from bench.search.product import registry
from config.logs import configure_logging
from config.settings import Settings
from data.engine import make_engine
from data.migrate import migrate
from data.server import resolve_url
from indexer.commands import config_from, load_demo
from indexer.embedders import Registry
from indexer.onnx_minilm import THREADS

DATABASE = "ss_search_indexing"
WHEN = {False: "idle", True: "beside one CPU-bound process"}


async def _timed(settings: Settings, dense: bool, registry: Registry) -> tuple[float, int]:
    """Seconds the first load took, and the passages it embedded (each model's counted)."""
    server = resolve_url(settings.database_url, settings.data_dir)
    engine = make_engine(await recreate(server, DATABASE), statement_timeout_ms=600_000)
    try:
        await migrate(engine)
        started = time.perf_counter()
        loaded = await load_demo(
            engine, config_from(settings, progress=False), registry, dense=dense
        )
        took = time.perf_counter() - started
    finally:
        await engine.dispose()
        await drop(server, DATABASE)
    return took, loaded.report.chunks_embedded


async def run(with_torch: bool) -> list[str]:
    settings = Settings.from_env()
    configure_logging("WARNING")
    loads = [  # (name, dense, how MiniLM runs)
        ("lexical only", False, "onnx"),
        (f"MiniLM int8 ONNX ({THREADS} threads, the product)", True, "onnx"),
    ]
    if with_torch:
        loads.append((f"MiniLM under {torch_version()} (2 threads)", True, "torch"))
    lines = [
        "| dense model | when | first load (s) | dense index (s) | vectors | ratio to idle |",
        "|---|---|---|---|---|---|",
    ]
    lexical: dict[bool, float] = {}
    idle: dict[str, float] = {}
    for busy in (False, True):
        for name, dense, runtime in loads:
            with busy_processes(int(busy)):
                took, vectors = await _timed(settings, dense, registry(runtime, cached=False))
            if not dense:
                lexical[busy] = took
            own = took - lexical[busy] if dense else took  # the dense index, or the whole load
            idle.setdefault(name, own)
            shown = f"{own:.1f}" if dense else "-"
            lines.append(
                f"| {name} | {WHEN[busy]} | {took:.1f} | {shown} | {vectors:,} "
                f"| {own / idle[name]:.2f}x |"
            )
            print(lines[-1], flush=True)
    return lines


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.search.indexing", description=__doc__)
    parser.add_argument("--out", help="bench/results/search-indexing-demo.md")
    opts = parser.parse_args(argv)
    with_torch = torch_installed()
    if not with_torch:
        print(f"torch is not installed: its rows are left out ({INSTALL})")
    lines = asyncio.run(run(with_torch))
    out = opts.out or result("search-indexing", "demo")
    with open(out, "w", encoding="utf-8") as handle:
        handle.write(HEADER + "\n".join(lines) + "\n")
    return 0


HEADER = """# Indexing the demo, by how MiniLM runs

`python -m bench.search.indexing`: the demo's first load (`load_demo`, what `similar-sessions
demo` and `make run` run: 200 tau-bench sessions imported, then one indexer pass), into a
fresh database, vectors embedded afresh. "dense index" is the load less the lexical-only
load under the same conditions; "ratio to idle" sets each row's dense index (the lexical
row: its whole load) against the same model's idle row; "vectors": the passages embedded,
each model's counted (a passage's windows are not).
2 cores.

"""


if __name__ == "__main__":
    sys.exit(main())
