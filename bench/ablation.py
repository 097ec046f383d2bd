"""`python -m bench.ablation`: bench/quality/ablation.py."""

import sys

from bench.quality.ablation import main

if __name__ == "__main__":
    sys.exit(main())
