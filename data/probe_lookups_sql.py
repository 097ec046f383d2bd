"""One probe's lookup in the comparison's first statement, as SQL text: the probes with their
vectors, their candidate chunks, and their nearest chunks on the exact path (over a pool read
once, or by a scan of the account) or on an approximate one (an HNSW index, over-fetched and
re-ranked, with what its window looked like). data/comparison_sql.py assembles them."""

from __future__ import annotations

from collections.abc import Callable

from data.exact_lookup import (
    exact_order,
    finite,
    finite_and_close,
    in_window,
    other_session,
    session_accepted,
)
from data.model_identity import ModelIdentity
from data.model_indexes import BUILT_KIND, IndexKind, comparable_predicate, vector_expression
from data.vector_slots import VectorSlot
from values.lookups import LookupPath


def path_literal(path: LookupPath) -> str:
    """The path as the statement's SQL writes it."""
    return f"'{path.value}'"


EXACT = path_literal(LookupPath.EXACT)


def probe_vectors(n: int, identity: ModelIdentity) -> str:
    """The probes of the model with their vectors; `lookup` is the first probe of the same
    comparison with the same vector (a session repeating one turn has eight identical probes)
    and `sharers` all of them: only that one is looked up, and its rows are given to each."""
    return (
        f"probe_{n} AS MATERIALIZED (SELECT q.*, "
        "min(q.probe) OVER (PARTITION BY q.key, q.v) AS lookup, "
        "array_agg(q.probe) OVER (PARTITION BY q.key, q.v) AS sharers FROM ("
        "SELECT p.key, p.probe, f.session_id, f.cutoff, "
        "f.statuses, f.source_types, f.started_before, pa.path, "
        f"{vector_expression(identity, 'c')} AS v "
        "FROM retried p JOIN found f ON f.key = p.key JOIN paths pa ON pa.model = p.model "
        "JOIN session_chunks c ON c.account_id = :account_id AND c.id = p.chunk_id "
        f"WHERE p.model = {identity.sql_literal()}) AS q)"
    )


# Whether chunk `c` was written within probe `p`'s window (`window_days`).
IN_WINDOW = in_window()


def candidates(scope: str, filtered: bool, in_window: str = IN_WINDOW) -> str:
    """The candidate chunks `c` of probe `p` within scope and `in_window`; with filters,
    joined to their session `s` for its status, source type and start."""
    where = f"WHERE {scope} AND {other_session('c.runtime_session_id')} AND {in_window}"
    if not filtered:
        return f"session_chunks c {where}"
    return (
        "session_chunks c JOIN runtime_sessions s "
        f"ON s.account_id = c.account_id AND s.id = c.runtime_session_id {where} "
        f"AND {session_accepted()}"
    )


def exact_pool(n: int, identity: ModelIdentity, filtered: bool) -> str:
    """The account's comparable chunks of the model, read once for every probe on the exact
    path (read only when one takes it): narrow rows, the vector in the lookup's type."""
    scope = f"c.account_id = :account_id AND {comparable_predicate(identity, 'c')}"
    columns = (
        "c.id, c.runtime_session_id AS session_id, c.occurred_at, "
        f"{vector_expression(identity, 'c')} AS v"
    )
    if not filtered:
        return f"pool_{n} AS MATERIALIZED (SELECT {columns} FROM session_chunks c WHERE {scope})"
    return (
        f"pool_{n} AS MATERIALIZED (SELECT {columns}, s.status, s.source_type, s.started_at "
        "FROM session_chunks c JOIN runtime_sessions s "
        f"ON s.account_id = c.account_id AND s.id = c.runtime_session_id WHERE {scope})"
    )


def exact_in_pool(n: int, filtered: bool) -> str:
    """Per probe on the exact path, its nearest chunks among the pool read once: a top-N
    pass over rows in memory, where a scan of the table per probe would read every chunk as
    many times as there are probes."""
    where = f"{other_session('c.session_id')} AND {IN_WINDOW}"
    if filtered:
        where += f" AND {session_accepted(session='c')}"  # the pool's rows carry them
    return (
        "SELECT p.key, unnest(p.sharers) AS probe, a.chunk_id, a.session_id, a.distance "
        f"FROM probe_{n} p CROSS JOIN LATERAL (SELECT c.id AS chunk_id, c.session_id, "
        f"(c.v <=> p.v) AS distance FROM pool_{n} c WHERE {where} "
        "ORDER BY distance, c.id LIMIT :per_probe) AS a "
        f"WHERE p.path = {EXACT} AND p.probe = p.lookup "
        f"AND {finite_and_close('a.distance', floor_of(n))}"
    )


def floor_of(n: int) -> str:
    """The floor of the statement's model branch n (each model has its own)."""
    return f"CAST(:floor_{n} AS float8)"


def _distance(identity: ModelIdentity, slot: VectorSlot) -> str:
    """A chunk's (alias `c`) distance to the probe's vector: in the dense slot, its best
    window's when the dense model read it in several (session_chunk_windows), which the
    windows' average blurs; NULL windows (none) leave the chunk's own."""
    own = f"({vector_expression(identity, 'c', slot)} <=> p.v)"
    if slot is not VectorSlot.DENSE:
        return own
    best = (
        f"(SELECT min(w.embedding::vector({identity.dimensions}) <=> p.v) "
        "FROM session_chunk_windows w WHERE w.account_id = c.account_id AND w.chunk_id = c.id)"
    )
    return f"least({own}, {best})"


def exact_scan(
    n: int,
    identity: ModelIdentity,
    filtered: bool,
    slot: VectorSlot = VectorSlot.PRIMARY,
    scope: str | None = None,
    path: LookupPath = LookupPath.EXACT,
) -> str:
    """Per probe on `path` (the exact one), its nearest chunks by a scan of the account's
    chunks: for the exact check of a few probes on an account of any size, where reading the
    whole account into a pool first would write it all to temporary files. With `scope` (on
    alias `c`), of those rows only: an own index's tail (data/account_indexes.py), scanned
    beside the index for probes on the account_index path and merged with its answer by
    `hits`."""
    scope = scope or f"c.account_id = :account_id AND {comparable_predicate(identity, 'c', slot)}"
    distance = _distance(identity, slot)
    return (
        "SELECT p.key, unnest(p.sharers) AS probe, a.chunk_id, a.session_id, a.distance "
        f"FROM probe_{n} p CROSS JOIN LATERAL (SELECT c.id AS chunk_id, "
        f"c.runtime_session_id AS session_id, {distance} AS distance "
        f"FROM {candidates(scope, filtered)} {exact_order(distance, ':per_probe')}) AS a "
        f"WHERE p.path = {path_literal(path)} AND p.probe = p.lookup "
        f"AND {finite_and_close('a.distance', floor_of(n))}"
    )


# What an approximate lookup's over-fetched window looked like, per candidate: how many the
# scan returned, the farthest, how many at the candidate's distance, and its place by it.
_WINDOW = (
    "count(*) OVER () AS scanned, "
    f"max(distance) FILTER (WHERE {finite('distance')}) OVER () AS farthest, "
    "count(*) OVER (PARTITION BY distance) AS tied, rank() OVER (ORDER BY distance) AS place"
)


# IN_WINDOW, or a repeat of `c` is: a representative stands for its repeats in the graph, and
# the latest of them occurred at its repeats_until (data/repeats.py).
_OR_REPEATED_WITHIN = in_window(occurred="greatest(c.occurred_at, c.repeats_until)")


def approximate_lookup(
    n: int,
    identity: ModelIdentity,
    path: LookupPath,
    scope: Callable[[bool], str],
    filtered: bool,
    kind: IndexKind = BUILT_KIND,
) -> str:
    """Per probe, the over-fetched nearest candidates from an HNSW index of the kind
    (iterative scan, ordered by the index's own expression), re-ranked by the full-precision
    distance to per_probe, each with what the window it was cut from looked like (how many
    candidates, the farthest, how many at its distance) and its model's floor (not applied
    here). `scope(repeats)` is the index's predicate on alias `c`, or with `repeats` the rows
    its lookups answer with (model_indexes.not_a_repeat).

    The index holds no repeat (data/repeats.py): a candidate kept (one as near as the
    per_probe-th, ties included) brings its repeats at its own distance, the first per_probe
    of them by id, and the cut to per_probe is made over both, by (distance, id): whenever
    the index finds a representative, this is what an exact scan of every chunk keeps. A
    representative written before the probe's window still comes when a repeat of it falls
    in the window; only its repeats that do are kept. The window describes the index's scan,
    the repeats added apart."""
    distance = f"({vector_expression(identity, 'c')} <=> p.v)"
    near = (
        f"SELECT c.id AS chunk_id, c.runtime_session_id AS session_id, {distance} AS distance, "
        f"{IN_WINDOW} AS in_window "
        f"FROM {candidates(scope(False), filtered, _OR_REPEATED_WITHIN)} "
        f"ORDER BY {kind.distance(identity, 'c', 'p.v')} LIMIT :overfetch"
    )
    windowed = f"SELECT near.*, {_WINDOW} FROM ({near}) AS near"
    repeats = (
        f"SELECT c.id FROM session_chunks c WHERE {scope(True)} "
        f"AND c.repeat_of = k.chunk_id AND {IN_WINDOW} ORDER BY c.id LIMIT :per_probe"
    )
    return (
        "SELECT p.key, unnest(p.sharers) AS probe, a.chunk_id, a.session_id, a.distance, "
        f"a.scanned, a.farthest, a.tied, {floor_of(n)} "
        f"FROM probe_{n} p CROSS JOIN LATERAL (SELECT e.chunk_id, k.session_id, k.distance, "
        f"k.scanned, k.farthest, k.tied FROM ({windowed}) AS k CROSS JOIN LATERAL ("
        f"SELECT k.chunk_id WHERE k.in_window UNION ALL ({repeats})) AS e (chunk_id) "
        "WHERE k.place <= :per_probe ORDER BY k.distance, e.chunk_id LIMIT :per_probe) AS a "
        f"WHERE p.path = {path_literal(path)} AND p.probe = p.lookup"
    )
