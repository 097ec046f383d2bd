"""Metrics, traces and the request id: what the app and the indexer report about themselves."""
