"""The house rules, checked on the source: SQL only in data/."""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("config", "data", "resolvers", "schema", "transfer", "indexer", "similar_sessions")
# SQL keywords as this code base writes them (upper case), not English words in docstrings.
SQL = re.compile(r"\b(SELECT|INSERT INTO|UPDATE \w+ SET|DELETE FROM|CREATE (UNIQUE )?INDEX)\b")


def modules() -> Iterator[tuple[str, Path, ast.Module]]:
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            if "migrations" not in path.parts:
                yield package, path, ast.parse(path.read_text(encoding="utf-8"))


def test_no_sql_text_outside_data() -> None:
    found = [
        f"{path.relative_to(ROOT)}:{node.lineno}"
        for package, path, tree in modules()
        if package != "data"
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and SQL.search(node.value)
    ]
    assert found == [], f"SQL text outside data/: {found}"
