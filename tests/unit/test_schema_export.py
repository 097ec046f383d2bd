"""schema.graphql is the exported schema: regenerate it with `strawberry export-schema`."""

from pathlib import Path

from schema import schema

SCHEMA_FILE = Path(__file__).resolve().parents[2] / "schema.graphql"


def test_schema_graphql_matches_the_code() -> None:
    assert SCHEMA_FILE.read_text(encoding="utf-8").strip() == schema.as_str().strip(), (
        "schema.graphql drifted: run "
        "`strawberry export-schema schema:schema --output schema.graphql`"
    )
