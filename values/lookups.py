"""What the lookups and the rules that plan them share: a lookup's path and bounds, the hits
it keeps, its scan window, and the settings its connection opens with. Plain values."""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from typing import NamedTuple
from uuid import UUID


class LookupPath(StrEnum):
    """How the nearest chunks are found for one account and model (the SQL, the logs and the
    metrics name them by these values)."""

    EXACT = "exact"  # one pass over the account's chunks: exact by construction
    # The account's own partial HNSW index (data/account_indexes.py), iterative scan,
    # over-fetch, exact re-rank: the path of large accounts.
    ACCOUNT_INDEX = "account_index"
    # The model's HNSW index shared by all accounts, filtered by account, same scan: the
    # fallback of a large account whose own index is not built yet.
    INDEX = "index"
    # A model the statement had no branch for (it appeared since the catalog was read).
    UNSERVED = "unserved"

    @property
    def approximate(self) -> bool:
        return self in (LookupPath.ACCOUNT_INDEX, LookupPath.INDEX)


@dataclass(frozen=True, slots=True)
class Limits:
    """The bounds of every lookup of a statement."""

    per_probe: int
    floor: float  # the floor of a model without one of its own in `floors`
    overfetch: int
    exact_scan_max_chunks: int
    probes: int  # probes per comparison (the contract's SIMILAR_PROBE_CHUNKS)
    floors: tuple[tuple[str, float], ...] = ()  # (model, its floor): calibrated per model

    def floor_for(self, model: str) -> float:
        """The floor of the model's lookups."""
        return dict(self.floors).get(model, self.floor)

    @property
    def window(self) -> int:
        """Candidates an approximate lookup reads before its exact re-rank (never fewer
        than it keeps)."""
        return max(self.overfetch, self.per_probe)


class Hit(NamedTuple):
    """One chunk a probe's lookup kept (a tuple: a page's first statement returns thousands)."""

    probe: int
    chunk_id: UUID
    session_id: UUID
    similarity: float


@dataclass(frozen=True, slots=True)
class ScanWindow:
    """What one approximate lookup's over-fetched window looked like: the candidates the scan
    returned and the farthest of them (cosine distance), the nearest and the last of the rows
    it kept, the largest group of those at one distance, and how many of them are hits. The
    distances are None when the scan returned no finite one."""

    scanned: int
    farthest: float | None
    nearest: float | None
    last: float | None
    tied: int
    hits: int


@dataclass(frozen=True, slots=True)
class ComparisonSettings:
    """What a comparison's connection is opened with, so a comparison sends no SET: its time
    budget, iterative HNSW scans of this width, and generic plans. The comparison's
    statements inline every literal their partial indexes' predicates need, so a generic
    plan uses those indexes (tested); planning the first statement anew for each execution
    cost more than a small account's whole lookup."""

    timeout_ms: int
    ef_search: int

    def server_settings(self) -> dict[str, str]:
        return {
            "statement_timeout": str(self.timeout_ms),
            "hnsw.iterative_scan": "relaxed_order",
            "hnsw.ef_search": str(self.ef_search),
            "plan_cache_mode": "force_generic_plan",
        }
