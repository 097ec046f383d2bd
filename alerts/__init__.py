"""Alerts: rules an account sets over its failure modes, evaluated by the indexing worker and
told by signed webhooks from a durable outbox (docs/alerts.md)."""
