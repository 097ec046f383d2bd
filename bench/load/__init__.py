"""The load run, `python -m bench.load.harness`: many clients on a running server."""
