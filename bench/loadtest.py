"""`python -m bench.loadtest`: the load harness, bench/load/harness.py."""

import sys

from bench.load.harness import main

if __name__ == "__main__":
    sys.exit(main())
