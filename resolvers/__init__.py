"""Resolvers, the per-request context and DataLoaders, and the ranking."""
