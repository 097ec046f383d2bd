"""`python -m bench.calibrate`: bench/quality/calibrate.py."""

import sys

from bench.quality.calibrate import main

if __name__ == "__main__":
    sys.exit(main())
