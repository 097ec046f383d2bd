"""The import run's report: the floor and the product side by side, wall time and CPU."""

from __future__ import annotations

import argparse

from bench.importing.floor import Floor
from bench.importing.runs import Run


def _s(value: float | None) -> str:
    return "n/a" if value is None else f"{value:,.1f} s"


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
            f"`{_command(args)}`: one run on this 2-core "
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
            f"| floor: COPY + both indexes (what the product built before issue #29) "
            f"| {_s(two)} | {_s(two_cpu)} |",
            f"| **`similar-sessions import FILE`** (process start to exit) "
            f"| **{_s(first.wall_s)}** | {_s(first.cpu_s)} |",
            f"| import / (COPY + one index) | {first.wall_s / base.total_s:.2f}x "
            f"| {ratio(one_cpu)} |",
            f"| import / (COPY + both indexes) | {first.wall_s / two:.2f}x | {ratio(two_cpu)} |",
            f"| import phases | {phases} | |",
            f"| import rate | {args.chunks / first.wall_s:,.0f} chunks/s | |",
            f"| import peak RSS | {first.peak_rss_mib:,.0f} MiB | |",
            f"| the same file again (changes nothing) | {_s(again.wall_s)} | {_s(again.cpu_s)} |",
            "",
            "The product keeps one HNSW graph over these rows, the account's own index"
            " (data/account_indexes.py): the model's shared index (data/model_indexes.py) leaves"
            " out the rows of an account that has, or with the file gets, an index of its own."
            " Before issue #29 both graphs held them; the floor's second index stands for that.",
            "",
            *_parts(args, base, parts),
        ]
    )


def _command(args: argparse.Namespace) -> str:
    """The command line that measured the report, the rebuild setting named when on."""
    files = f" --files {args.files}" if args.files > 1 else ""
    setting = "SIMILAR_SESSIONS_IMPORT_REBUILDS_OWN_INDEX=true " if args.rebuilds else ""
    return f"{setting}python -m bench.importing --chunks {args.chunks}{files}"


def _waiting(run: Run) -> str:
    """A comparison's median while the file's rows wait in the tail, the exact path's beside
    it, and after the merge."""
    if run.tail_ms is None or run.merged_ms is None:
        return "-"
    served, exact = run.tail_ms
    return f"{served:,.1f} / {exact:,.1f} / {run.merged_ms:,.1f} ms"


def _transaction_s(run: Run) -> float:
    """The seconds of the file's transaction (every phase but the rebuild, merge and fit after
    it)."""
    after = ("rebuild", "merge", "fit")
    return sum(v for k, v in run.phases.items() if k not in after) or run.wall_s


def _parts(args: argparse.Namespace, base: Floor, parts: list[Run]) -> list[str]:
    """The same rows cut into files imported one after the other into a fresh database: the
    first creates the account and builds its indexes, the later ones are incremental (the
    account already has its own index)."""
    if not parts:
        return []
    rows = [
        f"| {n + 1} | {r.chunks:,} | {_s(r.wall_s)} | {r.chunks / r.wall_s:,.0f} "
        f"| {_s(_transaction_s(r))} | {r.chunks / _transaction_s(r):,.0f} | {_s(r.cpu_s)} "
        f"| {', '.join(f'{k} {v:,.1f} s' for k, v in r.phases.items())} "
        f"| {_s(r.merge_s) if r.merge_s is not None else '-'} | {_waiting(r)} |"
        for n, r in enumerate(parts)
    ]
    later = parts[1:]
    later_rate = sum(r.chunks for r in later) / sum(r.wall_s for r in later) if later else 0
    with_merges = sum(r.wall_s + (r.merge_s or 0) for r in later)
    merged_rate = sum(r.chunks for r in later) / with_merges if later else 0
    return [
        f"## The same rows in {len(parts)} files, one after the other (a fresh database)",
        "",
        f"`--files {args.files}`: the first file creates the account and builds its own index "
        "in one pass; every later one imports into an account that already has its own index.",
        "",
        "| file | chunks | wall | chunks/s | the file's transaction | chunks/s in it | CPU "
        "| phases | merge-indexes after it | comparison p50: tail / its exact path / merged |",
        "|---|---|---|---|---|---|---|---|---|---|",
        *rows,
        f"| all | {sum(r.chunks for r in parts):,} | {_s(sum(r.wall_s for r in parts))} "
        f"| {sum(r.chunks for r in parts) / sum(r.wall_s for r in parts):,.0f} | | "
        f"| {_s(sum(r.cpu_s or 0 for r in parts))} | |",
        "",
        "Wall: process start to exit. The file's transaction: its phases before the commit "
        "(read, check, write, index); `rebuild` is an own index built again after the commit "
        "(CREATE INDEX CONCURRENTLY), while the account's comparisons take the exact path.",
        "",
        f"Later files (incremental): {later_rate:,.0f} chunks/s; the floor beside them "
        f"(COPY + one index over all {args.chunks:,} rows): "
        f"{args.chunks / base.total_s:,.0f} chunks/s. A later file's rows are its account's "
        "own index's tail, looked up exactly once the file commits; `merge-indexes after it` "
        "is the merge the indexer's next pass makes of a due tail (the whole index built "
        "again, concurrently, the comparisons on the old index and the tail meanwhile). "
        f"With those merges counted: {merged_rate:,.0f} chunks/s. The comparisons: 24 of "
        "the account's sessions compared in process as the route compares them (median of "
        "2 rounds after a warm one), with the file's rows in the tail, on the exact path "
        "beside them, and after the merge.",
        "",
    ]
