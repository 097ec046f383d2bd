"""Stable 64-bit keys of strings (BLAKE2b, not Python's salted hash): the same on every
process and machine, so fitted weights and vectors can be stored and compared."""

from __future__ import annotations

import hashlib
from functools import lru_cache


# The features of a refit (every passage of an account) or of a stream's passages, 131,072
# kept (about 24 MB): on bench.ingest's 26,298 chunks a fit and their embedding took as long
# as with 262,144 (about 48 MB, the bound before); with 65,536 they embedded 9% slower, and
# with none they fitted 25% slower.
@lru_cache(maxsize=1 << 17)
def feature_key(feature: str) -> int:
    return int.from_bytes(hashlib.blake2b(feature.encode(), digest_size=8).digest(), "little")
