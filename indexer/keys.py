"""Stable 64-bit keys of strings (BLAKE2b, not Python's salted hash): the same on every
process and machine, so fitted weights and vectors can be stored and compared."""

from __future__ import annotations

import hashlib
from functools import lru_cache


@lru_cache(maxsize=1 << 18)
def feature_key(feature: str) -> int:
    return int.from_bytes(hashlib.blake2b(feature.encode(), digest_size=8).digest(), "little")
