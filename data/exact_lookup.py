"""The exact lookup's terms, stated once: which chunks a probe may take (the candidate filter)
and which of them it keeps (a finite distance at or above the floor, nearest first, ties by
chunk id, `per_probe` of them), as SQL for the statements that look up (data/probe_lookups_sql.py,
data/window_pool.py, data/ef_fits.py) or filter as they do (the lexical leg, data/bm25.py;
the comparable check, data/comparison_details.py) and in Python for distances measured apart (the
failure modes' window pass)."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from uuid import UUID

from values.lookups import Hit


@dataclass(frozen=True, slots=True)
class Asked:
    """Where a statement reads what was asked of a lookup (SQL expressions): the window's
    start, the statuses and source types (NULL: any) and the latest start of a session."""

    cutoff: str
    statuses: str
    source_types: str
    started_before: str

    @classmethod
    def of_row(cls, alias: str) -> Asked:
        """What a probe row (of this alias) carries."""
        columns = ("cutoff", "statuses", "source_types", "started_before")
        return cls(*(f"{alias}.{column}" for column in columns))


PROBE = Asked.of_row("p")
# What a statement over one filter takes as its parameters :cutoff, :statuses, :source_types
# and :started_before.
PARAMETERS = Asked(
    "CAST(:cutoff AS timestamptz)",
    "CAST(:statuses AS text[])",
    "CAST(:source_types AS text[])",
    "CAST(:started_before AS timestamptz)",
)


def other_session(session: str, probe_session: str = "p.session_id") -> str:
    """A chunk of `session` is never a candidate of a probe of `probe_session`."""
    return f"{session} IS DISTINCT FROM {probe_session}"


def in_window(asked: Asked = PROBE, occurred: str = "c.occurred_at") -> str:
    """Whether a chunk that occurred at `occurred` is within the asked window."""
    return f"({asked.cutoff} IS NULL OR {occurred} >= {asked.cutoff})"


def session_accepted(asked: Asked = PROBE, session: str = "s", started: bool = True) -> str:
    """Whether a chunk's session (alias `session`, or a row carrying its columns) is of the
    asked statuses and source types and, with `started`, started before the asked instant."""
    accepted = (
        f"({asked.statuses} IS NULL OR {session}.status = ANY({asked.statuses})) "
        f"AND ({asked.source_types} IS NULL OR {session}.source_type = ANY({asked.source_types}))"
    )
    if not started:
        return accepted
    before = asked.started_before
    return f"{accepted} AND ({before} IS NULL OR {session}.started_at < {before})"


def finite(distance: str) -> str:
    """A zero vector's cosine distance is NaN, and NaN compares above every number in
    PostgreSQL (`1 - NaN >= 0.35` is true): only a finite distance is measured."""
    return f"{distance} <> 'NaN'::float8"


def finite_and_close(distance: str, floor: str = "floor") -> str:
    """Whether a candidate at `distance` is kept: finite, and at or above the floor."""
    return f"{finite(distance)} AND 1 - {distance} >= {floor}"


def exact_order(distance: str, limit: str) -> str:
    """The nearest `limit` candidates `c` by `distance`, ties by chunk id; `+ 0` keeps an HNSW
    index from serving the ORDER BY: an exact lookup must not be approximate."""
    return f"ORDER BY {distance} + 0, c.id LIMIT {limit}"


def close_enough(distance: float | None, floor: float) -> bool:
    """finite_and_close, of a distance pgvector measured (None: the chunk was removed since)."""
    return distance is not None and distance == distance and 1 - distance >= floor


def kept(
    probe: int, measured: Iterable[tuple[float | None, UUID, UUID]], floor: float, per_probe: int
) -> tuple[Hit, ...]:
    """The hits of probe number `probe` among its measured (distance, chunk, session)
    candidates: those finite and close, nearest first, ties by chunk id, `per_probe` of them."""
    close = sorted((d, c, s) for d, c, s in measured if d is not None and close_enough(d, floor))
    return tuple(Hit(probe, c, s, 1 - d) for d, c, s in close[:per_probe])
