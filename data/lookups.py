"""What a comparison asks the database and what its lookups answer, as typed rows: one
`Ask` per leg of a comparison in, one `Inventory` per ask and one `Lookup` per probe out.
Plain values, read by the pure rules (resolvers/rules/) as well as by the comparison."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from enum import StrEnum
from typing import Any, NamedTuple
from uuid import UUID

from data.accounts import EmbeddingSetting
from data.sessions import SessionRow


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


@dataclass(frozen=True, slots=True)
class Ask:
    """One comparison of a session (one leg of it) in a batch: its window, its neighbour
    filters (`started_before`: only sessions that started before that instant), and, when
    only some of its probes are to be looked up again, which."""

    key: int  # its place in the batch's statement
    session_id: UUID
    cutoff: datetime | None = None
    statuses: tuple[str, ...] | None = None
    source_types: tuple[str, ...] | None = None
    again: tuple[int, ...] | None = None  # the probes to look up again; None: all of them
    started_before: datetime | None = None

    @property
    def filtered(self) -> bool:
        return (
            self.statuses is not None
            or self.source_types is not None
            or self.started_before is not None
        )

    def as_json(self) -> dict[str, Any]:
        return {
            "key": self.key,
            "session_id": str(self.session_id),
            "cutoff": None if self.cutoff is None else self.cutoff.isoformat(),
            "statuses": None if self.statuses is None else list(self.statuses),
            "source_types": None if self.source_types is None else list(self.source_types),
            "again": None if self.again is None else list(self.again),
            "started_before": (
                None if self.started_before is None else self.started_before.isoformat()
            ),
        }


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
class Lookup:
    """One probe's answer: its hits, and its window when an index answered it."""

    hits: tuple[Hit, ...] = ()
    window: ScanWindow | None = None


@dataclass(frozen=True, slots=True)
class Probe:
    """One probe of a comparison, in probe order; `lookup` is the probe number whose lookup
    answers it (itself, or the first probe of the comparison with the same vector)."""

    number: int
    chunk_id: UUID
    lookup: int
    answer: Lookup = field(default_factory=Lookup)


@dataclass(frozen=True, slots=True)
class Inventory:
    """What the first statement found of one asked session: its embedded clear chunks by
    model, those still waiting, its comparison model and its probes (none without one)."""

    session: SessionRow
    embedded: dict[str, int]  # model -> embedded clear chunks
    pending: int
    model: str | None = None
    model_chunks: int = 0
    probes: tuple[Probe, ...] = ()


class ModelPath(NamedTuple):
    """The path a model's lookups took on the account, and its comparable chunks (counted up
    to the exact-scan size and one more)."""

    path: LookupPath
    comparable: int


@dataclass(frozen=True, slots=True)
class LookupAnswer:
    """The first statement's answer: the setting, one inventory per ask (in ask order; None
    for a session the account does not have), and each model's path."""

    setting: EmbeddingSetting | None
    inventories: tuple[Inventory | None, ...]
    paths: dict[str, ModelPath]


@dataclass(frozen=True, slots=True)
class TextAnswer:
    """A search text's lookup: its path, comparable chunks and answer."""

    path: ModelPath
    answer: Lookup


@dataclass(frozen=True, slots=True)
class Counted:
    """A timeline's count for one found ask: its comparison model, the (bucket start,
    sessions) counts, oldest first, and whether a probe's lookup reached the bound."""

    model: str | None = None
    buckets: tuple[tuple[datetime, int], ...] = ()
    bounded: bool = False
