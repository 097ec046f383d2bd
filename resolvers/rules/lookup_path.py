"""Which way an account's nearest chunks are looked up, chosen from its size, and whether
an approximate lookup can vouch for its answer."""

from __future__ import annotations

from enum import StrEnum

from values.lookups import LookupPath, ScanWindow

__all__ = ["Doubt", "LookupPath", "choose_path", "reached_floor", "vouches_for", "why_not_vouched"]


class Doubt(StrEnum):
    """Why an approximate lookup's window cannot vouch for its answer: the first condition of
    `vouches_for` it fails, in the order they are judged."""

    NO_WINDOW = "no window"  # the scan returned nothing it could measure
    SCAN_ENDED_EARLY = "scan ended early"
    FEWER_HITS_THAN_KEPT = "fewer hits than kept"
    WINDOW_ENDS_AT_ITS_LAST_ROW = "window ends at its last row"
    WINDOW_CROWDED = "window crowded"
    TIED_GROUP = "tied group"


def choose_path(
    own_index: bool, count: int, exact_scan_max_chunks: int, registered: bool = False
) -> LookupPath:
    """Exact for an account of at most exact_scan_max_chunks comparable chunks (one pass is
    then as fast as an index, and exact); else its own index; exact while an own index
    `registered` for it is not ready (its newer rows are not in the shared index); else,
    until it has one, the model's shared index."""
    if count <= exact_scan_max_chunks:
        return LookupPath.EXACT
    if own_index:
        return LookupPath.ACCOUNT_INDEX
    if registered:
        return LookupPath.EXACT
    return LookupPath.INDEX


# pgvector keeps at most this many rows with one identical vector in one graph node. A larger
# group of identical vectors (a session that repeats one turn) spans several nodes at distance
# zero from each other, which prune every edge leading out of the group: a scan that enters it
# may not leave it, nor return all of it, so ties on chunk id cannot be settled from its rows.
HNSW_ROWS_PER_NODE = 10
# Near-duplicates crowd a window when it ends less than NEAR_TIE_DISTANCE (cosine distance)
# past the probe's last kept row, or lies whole within CROWDED_WINDOW_DISTANCE of its nearest
# row: rows just past it may well belong among the kept ones, the scan's order between them
# cannot be trusted, and a dense clump (a session repeating a turn with small changes)
# captures scans that pass near it, hiding nearer rows. Ordinary windows are far wider.
NEAR_TIE_DISTANCE = 1e-3
CROWDED_WINDOW_DISTANCE = 1e-2


def reached_floor(window: ScanWindow | None, overfetch: int, floor: float) -> bool:
    """Whether the scan returned its whole over-fetch and went past the similarity floor: a
    wider search of the same graph then adds no hit unless the scan went astray (a clump of
    similar turns can capture one), which only an exact pass can tell."""
    return (
        window is not None
        and window.farthest is not None
        and window.scanned >= overfetch
        and 1 - window.farthest < floor
    )


def vouches_for(window: ScanWindow | None, overfetch: int, per_probe: int) -> bool:
    """Whether an approximate lookup's window lets it vouch for its answer. It cannot when
    the scan returned fewer candidates than the over-fetch (it stopped early, or could not
    leave a part of the graph), fewer than per_probe of them are hits (in an account past
    the exact-scan size the scan most likely went astray), its kept rows tie in a group of
    identical vectors larger than one graph node holds, or near-duplicates crowd it."""
    return why_not_vouched(window, overfetch, per_probe) is None


def why_not_vouched(window: ScanWindow | None, overfetch: int, per_probe: int) -> Doubt | None:
    """The first condition of `vouches_for` the window fails (what a trace says of a lookup
    that could not vouch), or None when it vouches."""
    if window is None or window.farthest is None or window.nearest is None or window.last is None:
        return Doubt.NO_WINDOW
    if window.scanned < overfetch:
        return Doubt.SCAN_ENDED_EARLY
    if window.hits < per_probe:
        return Doubt.FEWER_HITS_THAN_KEPT
    if overfetch > per_probe and window.farthest - window.last < NEAR_TIE_DISTANCE:
        return Doubt.WINDOW_ENDS_AT_ITS_LAST_ROW
    if overfetch > per_probe and window.farthest - window.nearest < CROWDED_WINDOW_DISTANCE:
        return Doubt.WINDOW_CROWDED
    if window.tied > HNSW_ROWS_PER_NODE:
        return Doubt.TIED_GROUP
    return None
