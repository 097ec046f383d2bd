"""The text of the comparison's first statement: the setting, the asked sessions, their
inventories, probes and lookup paths, and every probe's nearest chunks, in one statement.

The contract's rules that run here (the comparison model, the probe positions) mirror the
pure functions of resolvers/rules/ranking.py; a test keeps them equal. Each model's path is
the plan's (:paths), kept only from an index that is no longer there (`PATH_GUARD`). The
text depends on the models it has branches for and, for an account with an index of its
own, on the account (its predicate is inlined so the planner can use it).
Every row of an answer is tagged with its kind (`RowKind`), and data/comparison.py reads each
kind into its typed row (data/lookups.py). Each probe's lookup, on each path, is written by
data/probe_lookups_sql.py."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Literal
from uuid import UUID

from data.account_indexes import IndexShape, account_predicate, tail_predicate, valid_registered
from data.exact_lookup import finite, finite_and_close
from data.model_identity import ModelIdentity
from data.model_indexes import shared_predicate
from data.probe_lookups_sql import (
    EXACT,
    approximate_lookup,
    exact_in_pool,
    exact_pool,
    exact_scan,
    path_literal,
    probe_vectors,
)
from data.vector_slots import VectorSlot
from values.lookups import LookupPath

# The kinds of row an answer holds: the account's setting, one row per found ask (its session,
# inventory and probes, or its timeline counts), one per model (its path), one per lookup
# (its hits as three aligned arrays, and its window when an index answered it).
RowKind = Literal["setting", "ask", "path", "lookup"]
ACCOUNT_INDEX, INDEX, UNSERVED = (
    path_literal(p) for p in (LookupPath.ACCOUNT_INDEX, LookupPath.INDEX, LookupPath.UNSERVED)
)

# The lookup path of a model `d.model`: the one the plan decided (`d.planned`, from the
# account's snapshot: resolvers/rules/lookup_plan.py), unless the index it names is no longer
# what the snapshot said. An own index not ready now (dropped, or rebuilt after an import), or
# an own index registered since the snapshot (the rows written since are not in the shared
# index), would answer without rows the account has: the exact path answers instead. Only
# these facts are read at statement time; the account's size is the snapshot's.
PATH_GUARD = f"""WHEN d.planned = {ACCOUNT_INDEX}
                AND NOT EXISTS (SELECT 1 FROM {valid_registered(":account_id", "d.model")})
                THEN {EXACT}
              WHEN d.planned = {INDEX}
                AND EXISTS (SELECT 1 FROM account_model_indexes r
                            WHERE r.account_id = :account_id AND r.model_identity = d.model)
                THEN {EXACT}
              ELSE d.planned"""


def planned_paths(models: str) -> str:
    """The models of the subquery `models` (its column `model`) with the path the plan
    decided for each (:paths, model -> [path, comparable chunks]; exact for a model it does
    not name) and their comparable chunks as the snapshot counted them."""
    return (
        "SELECT m.model, coalesce(CAST(CAST(:paths AS jsonb) -> m.model ->> 1 AS int), 0) "
        f"AS comparable, coalesce(CAST(:paths AS jsonb) -> m.model ->> 0, {EXACT}) AS planned "
        f"FROM ({models}) m"
    )


PLAN = """
asked AS MATERIALIZED (
  SELECT a.key, a.session_id, a.cutoff, a.statuses, a.source_types, a.again, a.started_before
  FROM jsonb_to_recordset(CAST(:asks AS jsonb)) AS a(key int, session_id uuid,
    cutoff timestamptz, statuses text[], source_types text[], again int[],
    started_before timestamptz)),
setting AS MATERIALIZED (
  SELECT enabled, provider, model, dimensions, scope, daily_cap_usd, model_identity
  FROM embedding_settings WHERE account_id = :account_id),
found AS MATERIALIZED (
  SELECT a.*, s.title, s.source_type, s.source_id, s.reference, s.status, s.started_at,
         s.last_activity_at
  FROM asked a JOIN runtime_sessions s ON s.account_id = :account_id AND s.id = a.session_id),
inventory AS MATERIALIZED (
  SELECT f.key, c.id, c.embedding_model AS model, c.embedding_state AS state, c.source_kind,
         c.occurred_at, c.chunk_index
  FROM found f JOIN session_chunks c
    ON c.account_id = :account_id AND c.runtime_session_id = f.session_id
  WHERE c.redaction_state = 'clear'
    AND c.embedding_state IN ('embedded', 'pending', 'in_progress')),
embedded AS MATERIALIZED (
  SELECT key, model, count(*)::int AS n FROM inventory WHERE state = 'embedded'
  GROUP BY key, model),
chosen AS MATERIALIZED (
  SELECT DISTINCT ON (e.key) e.key, e.model, e.n FROM embedded e
  ORDER BY e.key, e.model IS NOT DISTINCT FROM (SELECT model_identity FROM setting) DESC,
           e.n DESC, e.model),
probes AS MATERIALIZED (
  SELECT o.key, (row_number() OVER (PARTITION BY o.key ORDER BY o.pos) - 1)::int AS probe,
         o.id AS chunk_id, o.model
  FROM (SELECT i.key, i.id, ch.model, ch.n,
               row_number() OVER (PARTITION BY i.key
                                  ORDER BY i.occurred_at, i.chunk_index, i.id) - 1 AS pos
        FROM inventory i JOIN chosen ch ON ch.key = i.key AND ch.model = i.model
        WHERE i.state = 'embedded') o
  WHERE o.n <= CAST(:probes AS int) OR o.pos IN (
    SELECT (2 * g * (o.n - 1) + CAST(:probes AS int) - 1) / (2 * (CAST(:probes AS int) - 1))
    FROM generate_series(0, CAST(:probes AS int) - 1) g)),
retried AS MATERIALIZED (
  SELECT p.* FROM probes p JOIN found f ON f.key = p.key
  WHERE f.again IS NULL OR p.probe = ANY(f.again)),
paths AS MATERIALIZED (
  SELECT d.model, d.comparable,
         CASE WHEN NOT d.model = ANY(CAST(:branch_models AS text[])) THEN {unserved}
              {path_guard} END AS path
  FROM ({planned}) d)"""


# One row per lookup: its hits above the floor as three aligned arrays (the aggregates of one
# group read its rows in one order: a page's thousands of hits come back as a few hundred
# rows, which the driver decodes natively), and, for an approximate lookup, what its window
# looked like (resolvers.rules.lookup_path judges whether it can vouch for its answer): the
# candidates the scan returned and the farthest of them, the nearest and the last of the rows
# kept, the largest group of them at one distance, and how many of them are hits. A lookup
# that returned nothing has no row.
LOOKUPS = f"""
UNION ALL SELECT 'lookup', coalesce(h.key, w.key), coalesce(h.probe, w.probe), w.window,
  h.chunk_ids, h.session_ids, h.similarities
FROM (SELECT key, probe, array_agg(chunk_id) AS chunk_ids, array_agg(session_id) AS session_ids,
             array_agg(1 - distance) AS similarities
      FROM hits GROUP BY key, probe) h
FULL JOIN (SELECT key, probe, jsonb_build_array(
  max(scanned), max(farthest), min(distance) FILTER (WHERE {finite("distance")}),
  max(distance) FILTER (WHERE {finite("distance")}), max(tied),
  count(*) FILTER (WHERE {finite_and_close("distance")})) AS window
  FROM nearest GROUP BY key, probe) w ON w.key = h.key AND w.probe = h.probe"""

# The columns every answer's rows share, and the setting's and the paths' rows.
HEAD = """
SELECT 'setting' AS kind, NULL::int AS key, NULL::int AS probe, to_jsonb(s) AS payload,
       NULL::uuid[] AS chunk_ids, NULL::uuid[] AS session_ids, NULL::float8[] AS similarities
FROM setting s"""
PATHS = """
UNION ALL SELECT 'path', NULL, comparable, jsonb_build_array(model, path), NULL, NULL, NULL
FROM paths"""

# Per found ask: its session, its embedded chunks by model, those of the account's scope still
# waiting, its comparison model and its probes ([number, chunk id, the probe whose lookup
# answers it]), in probe order.
ASKS = """
UNION ALL SELECT 'ask', f.key, NULL, jsonb_build_object(
  'session', jsonb_build_object('id', f.session_id, 'title', f.title,
    'source_type', f.source_type, 'source_id', f.source_id, 'reference', f.reference,
    'status', f.status, 'started_at', f.started_at, 'last_activity_at', f.last_activity_at),
  'embedded', coalesce(e.models, '{}'::jsonb), 'pending', coalesce(w.n, 0),
  'model', ch.model, 'chunks', coalesce(ch.n, 0), 'probes', coalesce(p.probes, '[]'::jsonb)),
  NULL, NULL, NULL
FROM found f LEFT JOIN chosen ch ON ch.key = f.key
LEFT JOIN (SELECT key, jsonb_object_agg(model, n) AS models FROM embedded GROUP BY key) e
  ON e.key = f.key
LEFT JOIN (SELECT i.key, count(*)::int AS n FROM inventory i WHERE i.state <> 'embedded'
  AND (i.source_kind = 'session_summary'
       OR (SELECT scope FROM setting) IS DISTINCT FROM 'summaries_only')
  GROUP BY i.key) w ON w.key = f.key
LEFT JOIN (SELECT r.key, jsonb_agg(jsonb_build_array(r.probe, r.chunk_id,
    coalesce(l.lookup, r.probe)) ORDER BY r.probe) AS probes
  FROM probes r LEFT JOIN looked l ON l.key = r.key AND l.probe = r.probe GROUP BY r.key) p
  ON p.key = f.key"""

# The comparison's answer: what the plan found, and every lookup.
ANSWER = HEAD + ASKS + PATHS + LOOKUPS


def _lookups(exact: list[str], approximate: list[str], tails: Sequence[str] = ()) -> str:
    """The CTEs `nearest` (the approximate lookups' rows, below the floor too, with their
    windows and their model's floor) and `hits` (every lookup's rows at or above its
    model's floor). With `tails` (own indexes' tails, looked up exactly), a probe's hits are
    the nearest per_probe of its index's and its tail's; its window stays the index's, so
    whether the index vouches for its part is judged as without a tail."""
    nearest = approximate or [
        "SELECT NULL::int, NULL::int, NULL::uuid, NULL::uuid, NULL::float8, NULL::bigint, "
        "NULL::float8, NULL::bigint, NULL::float8 WHERE false"
    ]
    close = (
        "SELECT key, probe, chunk_id, session_id, distance FROM nearest "
        f"WHERE {finite_and_close('distance')}"
    )
    found = " UNION ALL ".join([*exact, close, *tails])
    if tails:
        found = (
            "SELECT key, probe, chunk_id, session_id, distance FROM (SELECT u.*, row_number() "
            "OVER (PARTITION BY key, probe ORDER BY distance, chunk_id) AS place "
            f"FROM ({found}) AS u) AS ranked WHERE place <= :per_probe"
        )
    return (
        "nearest (key, probe, chunk_id, session_id, distance, scanned, farthest, tied, floor) "
        f"AS ({' UNION ALL '.join(nearest)}),\n"
        f"hits (key, probe, chunk_id, session_id, distance) AS ({found})"
    )


def _looked(models: int) -> str:
    """The CTE `looked`: the probes, among those of the `models` probe CTEs, that another
    probe's lookup answers (same comparison, same vector)."""
    looked = " UNION ALL ".join(
        f"SELECT key, probe, lookup FROM probe_{n} WHERE probe <> lookup" for n in range(models)
    )
    return (
        "looked (key, probe, lookup) AS ("
        + (looked or "SELECT NULL::int, NULL::int, NULL::int WHERE false")
        + ")"
    )


# The timeline's answer: per found ask, its comparison model, how many sessions had a hit at
# or above that model's related cut point (:related, by model), by the bucket their start
# falls in (UTC), and whether a probe's lookup reached its bound; and each model's path.
TIMELINE_ANSWER = (
    """
SELECT 'ask' AS kind, f.key, NULL::int AS probe, jsonb_build_object('model', ch.model,
  'buckets', coalesce(b.buckets, '[]'::jsonb), 'bounded', bd.key IS NOT NULL) AS payload,
  NULL::uuid[] AS chunk_ids, NULL::uuid[] AS session_ids, NULL::float8[] AS similarities
FROM found f LEFT JOIN chosen ch ON ch.key = f.key
LEFT JOIN (SELECT key, jsonb_agg(jsonb_build_array(start, sessions) ORDER BY start) AS buckets
  FROM (SELECT h.key, date_trunc(:bucket, s.started_at, 'UTC') AS start,
               count(DISTINCT h.session_id)::int AS sessions
        FROM hits h JOIN chosen ch ON ch.key = h.key
        JOIN runtime_sessions s ON s.account_id = :account_id AND s.id = h.session_id
        WHERE 1 - h.distance >= CAST(CAST(:related AS jsonb) ->> ch.model AS float8)
        GROUP BY h.key, date_trunc(:bucket, s.started_at, 'UTC')) counted
  GROUP BY key) b ON b.key = f.key
LEFT JOIN (SELECT DISTINCT key FROM (SELECT key FROM hits GROUP BY key, probe
  HAVING count(*) >= :per_probe) full_lookups) bd ON bd.key = f.key"""
    + PATHS
)


def first_statement(
    models: Sequence[ModelIdentity],
    account_id: UUID,
    filtered: bool,
    answer: str = ANSWER,
    pooled: bool = True,
    marks: Mapping[str, IndexShape] | None = None,
) -> str:
    """The comparison's first statement, with lookup branches for these models (a probe of
    another model is answered with the path 'unserved'). The account's own index is named by
    its literal predicate (with its watermark, from `marks` by model), so the text is per
    account; the rows past the mark are looked up exactly beside it. Each index is searched
    by the expression of its kind (`marks`). `pooled`: exact lookups
    rank a pool of the account's chunks read once (a page of probes on a small account);
    otherwise each scans the account (the exact check of a few probes, on an account of any
    size)."""
    ctes = [
        PLAN.strip().format(
            path_guard=PATH_GUARD,
            planned=planned_paths("SELECT DISTINCT model FROM chosen"),
            unserved=UNSERVED,
        )
    ]
    exact, approximate, tails = [], [], []
    for n, identity in enumerate(models):
        ctes.append(probe_vectors(n, identity))
        if pooled:
            ctes.append(exact_pool(n, identity, filtered))
            exact.append(exact_in_pool(n, filtered))
        else:
            exact.append(exact_scan(n, identity, filtered))
        shape = (marks or {}).get(str(identity), IndexShape())
        approximate += _approximate(n, identity, account_id, filtered, shape)
        tails += _tail(n, identity, filtered, shape.mark)
    ctes.append(_lookups(exact, approximate, tails))
    ctes.append(_looked(len(models)))
    return "WITH " + ",\n".join(ctes) + answer


def _approximate(
    n: int, identity: ModelIdentity, account_id: UUID, filtered: bool, shape: IndexShape
) -> list[str]:
    """The model's lookups on the shared index and on the account's own (up to its mark),
    each by its index's kind."""

    def shared(repeats: bool) -> str:
        return f"c.account_id = :account_id AND {shared_predicate(identity, 'c', repeats)}"

    def own(repeats: bool) -> str:
        return account_predicate(account_id, identity, "c", shape.mark, repeats)

    return [
        approximate_lookup(n, identity, LookupPath.INDEX, shared, filtered, shape.shared_kind),
        approximate_lookup(n, identity, LookupPath.ACCOUNT_INDEX, own, filtered, shape.own_kind),
    ]


def _tail(n: int, identity: ModelIdentity, filtered: bool, mark: int | None) -> list[str]:
    """The model's lookup of the own index's tail, when the index has a mark."""
    if mark is None:
        return []
    tail = tail_predicate(identity, mark)
    return [exact_scan(n, identity, filtered, scope=tail, path=LookupPath.ACCOUNT_INDEX)]


# A search text's answer: its path and its lookup.
SEARCH_ANSWER = (
    """
SELECT 'path' AS kind, NULL::int AS key, comparable AS probe,
       jsonb_build_array(model, path) AS payload,
       NULL::uuid[] AS chunk_ids, NULL::uuid[] AS session_ids, NULL::float8[] AS similarities
FROM paths"""
    + LOOKUPS
)


def search_statement(
    identity: ModelIdentity,
    account_id: UUID,
    filtered: bool,
    slot: VectorSlot = VectorSlot.PRIMARY,
    marks: Mapping[str, IndexShape] | None = None,
) -> str:
    """One probe, a vector given by the caller (an embedded search text), looked up as the
    comparison looks up its probes: same paths, same candidates (an own index's tail too),
    no own session. One probe gains nothing from a pool: its exact lookup scans the account.
    The dense slot has no HNSW index: its lookups take the exact path."""
    model = identity.sql_literal()
    paths = (
        f"paths AS MATERIALIZED (SELECT d.model, d.comparable, CASE {PATH_GUARD} END AS path "
        f"FROM ({planned_paths(f'SELECT {model}::text AS model')}) d)"
    )
    probe = (
        "probe_0 AS MATERIALIZED (SELECT 0 AS key, 0 AS probe, NULL::uuid AS session_id, "
        "CAST(:cutoff AS timestamptz) AS cutoff, CAST(:statuses AS text[]) AS statuses, "
        "CAST(:source_types AS text[]) AS source_types, "
        "CAST(NULL AS timestamptz) AS started_before, pa.path, "
        f"CAST(:vector AS vector({identity.dimensions})) AS v, "
        "0 AS lookup, ARRAY[0] AS sharers FROM paths pa)"
    )
    approximate, tails = [], []
    if slot is VectorSlot.PRIMARY:
        shape = (marks or {}).get(str(identity), IndexShape())
        approximate = _approximate(0, identity, account_id, filtered, shape)
        tails = _tail(0, identity, filtered, shape.mark)
    lookups = _lookups([exact_scan(0, identity, filtered, slot)], approximate, tails)
    return f"WITH {paths},\n{probe},\n{lookups}" + SEARCH_ANSWER
