"""The house rules, checked on the source: SQL only in data/, every product function under
fifty lines, no import cycle between the top-level packages nor between the modules of one,
no contract constant written into SQL as a literal, nothing importing the entry points
(similar_sessions/) but themselves, the pure rules importing no rows, the ground floor
(values/) importing no package of ours, and the candidate filter written in one module."""

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
    "alerts",
    "similar_sessions",
    "values",
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


def module_name(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def module_graph() -> dict[str, set[str]]:
    """Each module and the modules of its own package it imports, at run time or for type
    checking alone (an import under `if TYPE_CHECKING:` is a cycle all the same: issue #40)."""
    trees = {module_name(path): tree for _, path, tree in modules()}
    graph: dict[str, set[str]] = {}
    for name, tree in trees.items():
        needs: set[str] = set()
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                for alias in node.names:
                    full = f"{node.module}.{alias.name}"
                    needs.add(full if full in trees else node.module)
            elif isinstance(node, ast.Import):
                needs.update(alias.name for alias in node.names)
        package = name.split(".")[0]
        graph[name] = {m for m in needs if m in trees and m != name and m.startswith(package)}
    return graph


def test_no_import_cycle_between_the_modules_of_a_package() -> None:
    assert cycles(module_graph()) == []


def test_the_module_cycle_check_sees_a_cycle_inside_a_package() -> None:
    graph = module_graph()
    graph["resolvers.rules.ranking"] = graph["resolvers.rules.ranking"] | {"resolvers.context"}
    assert any("resolvers.rules.ranking" in cycle for cycle in cycles(graph))


# The contract's constants (resolvers/rules/ranking.py) the SQL takes as parameters: the probe
# count, the neighbours per probe, the timeline's bound, the preview length, the floor and the
# breadth weight. (The band cut points reach SQL only as the timeline's parameter, and 0.5 is
# also BM25's smoothing.)
CONTRACT_LITERALS = re.compile(r"(?<![\w.:$'\"])(?:8|25|200|280|0\.35|0\.02)(?![\w.])")


def contract_literals(text: str) -> list[str]:
    """The literals of an SQL text that repeat a contract constant."""
    return CONTRACT_LITERALS.findall(text) if SQL.search(text) else []


def test_no_sql_repeats_a_contract_constant() -> None:
    found = [
        f"{path.relative_to(ROOT)}:{node.lineno} {literal}"
        for package, path, tree in modules()
        if package == "data"
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant) and isinstance(node.value, str)
        for literal in contract_literals(node.value)
    ]
    assert found == [], f"contract constants written into SQL: {found}"


def test_the_literal_check_sees_a_probe_count_in_sql() -> None:
    assert contract_literals("SELECT 1 FROM probes WHERE o.n <= 8 LIMIT :per_probe") == ["8"]
    assert contract_literals("SELECT 1 WHERE x >= 0.35 AND y = 'a8' AND z = :p8") == ["0.35"]
    assert contract_literals("the 8 probes of a comparison") == []  # prose, not SQL


def test_the_cycle_check_sees_a_cycle() -> None:
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c", "a"]]


def test_only_the_entry_points_import_the_entry_points() -> None:
    importers = [p for p, needs in package_graph().items() if "similar_sessions" in needs]
    assert importers == []


def test_the_pure_rules_import_nothing_from_data() -> None:
    rules = ROOT / "resolvers" / "rules"
    found = [
        str(path.relative_to(ROOT))
        for _, path, tree in modules()
        if path.is_relative_to(rules) and "data" in imported_packages(tree)
    ]
    assert found == [], f"rules importing data/: {found}"


def test_the_ground_floor_imports_no_package_of_ours() -> None:
    assert package_graph()["values"] == set()


# The candidate filter's conditions as SQL writes them, stated in data/exact_lookup.py alone.
CANDIDATE_FILTER = re.compile(r"\bstatus = ANY\(|\bsource_type = ANY\(|'NaN'::float8|started_at < ")


def test_the_candidate_filter_is_written_in_one_module() -> None:
    home = ROOT / "data" / "exact_lookup.py"
    found = [
        f"{path.relative_to(ROOT)}:{node.lineno}"
        for _, path, tree in modules()
        if path != home
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant)
        and isinstance(node.value, str)
        and CANDIDATE_FILTER.search(node.value)
    ]
    assert found == [], f"the candidate filter written outside data/exact_lookup.py: {found}"


def test_the_filter_check_sees_a_condition() -> None:
    assert CANDIDATE_FILTER.search("AND (p.statuses IS NULL OR s.status = ANY(p.statuses))")
    assert CANDIDATE_FILTER.search("WHERE distance <> 'NaN'::float8")
    assert not CANDIDATE_FILTER.search("the statuses a session may have")
