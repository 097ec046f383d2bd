"""Live ingest under load: simulated agents sending GenAI spans over OTLP/HTTP (issue 55).
`python -m bench.ingest`; see __main__.py."""
