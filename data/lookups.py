"""What a comparison asks the database and what its lookups answer, as typed rows: one
`Ask` per leg of a comparison in, one `Inventory` per ask and one `Lookup` per probe out.
The values the pure rules read as well are in values/lookups.py."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, NamedTuple
from uuid import UUID

from data.accounts import EmbeddingSetting
from data.sessions import SessionRow
from values.lookups import Hit, LookupPath, ScanWindow


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
