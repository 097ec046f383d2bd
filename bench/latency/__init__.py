"""The latency run, `python -m bench.run` (bench/run.py): a synthetic multi-tenant corpus, the
measures it takes, and one module per section of its report."""
