"""The load run, `python -m bench.loadtest`: many clients on a running server."""
