"""GraphQL types and the schema object: no SQL, no ranking."""

from schema.query import make_schema

schema = make_schema()

__all__ = ["make_schema", "schema"]
