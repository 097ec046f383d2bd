"""The pure rules of a comparison: probe positions, grouping and order, bands and floors,
the lookup path, and the degraded block. No SQLAlchemy, no strawberry: unit-tested alone."""
