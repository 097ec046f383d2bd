"""The import/export format and the formats agents already write: lines in, records out,
streamed into PostgreSQL; every table row back out as lines."""
