"""The house rules, checked on the source: SQL only in data/, every product function under
fifty lines, no import cycle between the top-level packages, and nothing importing the entry
points (similar_sessions/) but themselves."""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = (
    "config",
    "data",
    "resolvers",
    "schema",
    "transfer",
    "indexer",
    "observability",
    "similar_sessions",
)
MAX_FUNCTION_LINES = 50
# SQL keywords as this code base writes them (upper case), not English words in docstrings.
SQL = re.compile(r"\b(SELECT|INSERT INTO|UPDATE \w+ SET|DELETE FROM|CREATE (UNIQUE )?INDEX)\b")


def modules() -> Iterator[tuple[str, Path, ast.Module]]:
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            if "migrations" not in path.parts:
                yield package, path, ast.parse(path.read_text(encoding="utf-8"))


def imported_packages(tree: ast.Module) -> set[str]:
    """The top-level packages of this code base a module imports, wherever the import sits."""
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module.split(".")[0])
    return names & set(PACKAGES)


def package_graph() -> dict[str, set[str]]:
    graph: dict[str, set[str]] = {package: set() for package in PACKAGES}
    for package, _, tree in modules():
        graph[package] |= imported_packages(tree) - {package}
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    found: list[list[str]] = []

    def visit(node: str, path: list[str]) -> None:
        for nxt in sorted(graph[node]):
            if nxt == path[0]:
                found.append([*path, nxt])
            elif nxt not in path and nxt > path[0]:  # each cycle once, from its least name
                visit(nxt, [*path, nxt])

    for start in sorted(graph):
        visit(start, [start])
    return found


def test_no_sql_text_outside_data() -> None:
    found = [
        f"{path.relative_to(ROOT)}:{node.lineno}"
        for package, path, tree in modules()
        if package != "data"
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and SQL.search(node.value)
    ]
    assert found == [], f"SQL text outside data/: {found}"


def test_every_product_function_is_under_fifty_lines() -> None:
    long = [
        f"{path.relative_to(ROOT)}:{node.lineno} {node.name} ({lines} lines)"
        for _, path, tree in modules()
        for node in ast.walk(tree)
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
        and (lines := (node.end_lineno or node.lineno) - node.lineno + 1) >= MAX_FUNCTION_LINES
    ]
    assert long == [], f"functions of {MAX_FUNCTION_LINES} lines or more: {long}"


def test_no_import_cycle_between_packages() -> None:
    assert cycles(package_graph()) == []


def test_the_cycle_check_sees_a_cycle() -> None:
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c", "a"]]


def test_only_the_entry_points_import_the_entry_points() -> None:
    importers = [p for p, needs in package_graph().items() if "similar_sessions" in needs]
    assert importers == []
