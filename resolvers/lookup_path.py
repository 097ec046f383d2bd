"""Which way an account's nearest chunks are looked up, chosen from its size."""

from __future__ import annotations

from enum import Enum


class LookupPath(Enum):
    """How the nearest chunks are found for one account and model."""

    EXACT = "exact"  # one pass over the account's chunks: exact by construction
    # The account's own partial HNSW index (data/account_indexes.py), iterative scan,
    # over-fetch, exact re-rank: the path of large accounts.
    ACCOUNT_INDEX = "account_index"
    # The model's HNSW index shared by all accounts, filtered by account, same scan: the
    # fallback of a large account whose own index is not built yet.
    INDEX = "index"

    @property
    def approximate(self) -> bool:
        return self is not LookupPath.EXACT


def choose_path(own_index: bool, count: int, exact_scan_max_chunks: int) -> LookupPath:
    """Exact for an account of at most exact_scan_max_chunks comparable chunks (one pass is
    then as fast as an index, and exact); else its own index, or until that is built the
    model's shared index."""
    if count <= exact_scan_max_chunks:
        return LookupPath.EXACT
    if own_index:
        return LookupPath.ACCOUNT_INDEX
    return LookupPath.INDEX
