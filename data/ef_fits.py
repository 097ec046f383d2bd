"""The hnsw.ef_search an account's own index is searched with, fitted on the account's own
vectors (issue #29).

How wide an HNSW search must be to find a probe's nearest chunks depends on how the vectors
lie: evenly spread at 1M rows, ef_search 200 missed a probe's chunks (worst recall@25 0.92)
where 400 did not; on vectors in topics (clustered, or real sessions under the lexical model)
100 found every one, at a third of the time. So after an account's own index is built (and
after a file grew it), the index is measured: FIT_SAMPLES of its chunks, chosen by a hash of
their ids, are looked up as a comparison looks up a probe (over-fetched from the index,
re-ranked exactly, the probe's own session left out) at each of FIT_CANDIDATES, and against
an exact scan. The lowest candidate whose recall@25 holds on every sample (FIT_MIN_RECALL)
and on average (FIT_MIN_MEAN_RECALL) is registered beside the index; none holding, none is
registered, and the configured ef_search stays. The comparisons on the account's index then
run at the fitted value when it is below the configured one; their wider retry and their
exact check are unchanged, so an answer the narrower search could not vouch for is still
asked again and checked. The measurements are kept beside it (`ef_fit`)."""

from __future__ import annotations

import json
import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from uuid import UUID

from sqlalchemy import text
from sqlalchemy.exc import DBAPIError
from sqlalchemy.ext.asyncio import AsyncConnection

from data.engine import lift_statement_budget
from data.exact_lookup import exact_order, other_session
from data.model_identity import ModelIdentity
from data.model_indexes import IndexKind, vector_expression

# tried from the lowest, each below the configured default of 400; 300 is for the accounts
# whose hardest probes 200 misses (a 25k clustered account drawn anew: worst recall@25 0.92
# at 200, 0.96 at 300), which 400 would otherwise search at 0.75x the speed of 300
FIT_CANDIDATES = (100, 200, 300)
FIT_SAMPLES = 32
FIT_MIN_SAMPLES = 8  # fewer measured probes (a tiny account) fit nothing
FIT_MIN_RECALL = 0.96  # every sample: at 1M evenly spread, ef 400's worst probe
FIT_MIN_MEAN_RECALL = 0.99
# The contract's neighbours per probe (resolvers.rules.ranking.SIMILAR_NEIGHBOURS_PER_PROBE)
# and the default over-fetch (SIMILAR_SESSIONS_HNSW_OVERFETCH): a test keeps them equal.
FIT_NEIGHBOURS = 25
FIT_OVERFETCH = 100


@dataclass(frozen=True, slots=True)
class EfFit:
    """What one fit measured: recall@25 of each sample at each candidate, and the choice."""

    samples: int
    recalls: Mapping[int, Sequence[float]]
    ef_search: int | None
    error: str | None = None  # why the measurement failed (the index stands without a fit)

    @property
    def measured(self) -> dict[int, tuple[float, float]]:
        """Per candidate measured, its mean and worst recall@25."""
        return {
            ef: (round(statistics.fmean(r), 4), round(min(r), 4))
            for ef, r in self.recalls.items()
            if r
        }

    def summary(self) -> dict[str, object]:
        """The fit as kept beside the index: per candidate, mean and worst recall."""
        return {
            "samples": self.samples,
            "recall": {str(ef): list(m) for ef, m in self.measured.items()},
            "ef_search": self.ef_search,
            "fitted_at": datetime.now(UTC).isoformat(),
            **({"error": self.error} if self.error else {}),
        }


def chosen(recalls: Mapping[int, Sequence[float]]) -> int | None:
    """The lowest candidate whose recall holds on every sample and on average, or None."""
    for ef in sorted(recalls):
        measured = recalls[ef]
        if (
            len(measured) >= FIT_MIN_SAMPLES
            and min(measured) >= FIT_MIN_RECALL
            and statistics.fmean(measured) >= FIT_MIN_MEAN_RECALL
        ):
            return ef
    return None


def _sample_sql(predicate: str) -> str:
    """FIT_SAMPLES of the index's chunks, by a hash of their ids (the same ones every time)."""
    return (
        f"SELECT c.id FROM session_chunks c WHERE {predicate} "
        f"ORDER BY md5(c.id::text) LIMIT {FIT_SAMPLES}"
    )


def _nearest_sql(predicate: str, identity: ModelIdentity, exact: bool, kind: IndexKind) -> str:
    """Per sampled chunk (:ids), its FIT_NEIGHBOURS nearest chunks of other sessions: from
    the account's own index (of the kind) as a comparison's lookup reads it (over-fetched,
    re-ranked), or by an exact scan. `predicate` is the index's, on alias `c`."""
    distance = f"({vector_expression(identity, 'c')} <=> s.v)"
    near = (
        f"SELECT c.id, {distance} AS d FROM session_chunks c WHERE {predicate} "
        f"AND {other_session('c.runtime_session_id', 's.session_id')} "
        + (
            exact_order(distance, str(FIT_NEIGHBOURS))
            if exact
            else f"ORDER BY {kind.distance(identity, 'c', 's.v')} LIMIT {FIT_OVERFETCH}"
        )
    )
    sample = (
        f"SELECT c.id, c.runtime_session_id AS session_id, {vector_expression(identity, 'c')} "
        f"AS v FROM session_chunks c WHERE {predicate} AND c.id = ANY(CAST(:ids AS uuid[]))"
    )
    return (
        f"WITH s AS MATERIALIZED ({sample}) "
        "SELECT s.id, a.ids FROM s CROSS JOIN LATERAL (SELECT array_agg(id ORDER BY d, id) "
        f"AS ids FROM (SELECT id, d FROM ({near}) n ORDER BY d, id LIMIT {FIT_NEIGHBOURS}) k) a"
    )


async def _nearest(
    conn: AsyncConnection,
    predicate: str,
    identity: ModelIdentity,
    ids: list[UUID],
    ef: int | None,
    kind: IndexKind,
) -> dict[UUID, set[UUID]]:
    if ef is not None:
        await conn.execute(
            text(
                "SELECT set_config('hnsw.ef_search', :ef, true), "
                "set_config('hnsw.iterative_scan', 'relaxed_order', true)"
            ),
            {"ef": str(ef)},
        )
    sql = text(_nearest_sql(predicate, identity, ef is None, kind))
    rows = await conn.execute(sql, {"ids": ids})
    return {sample: set(found or ()) for sample, found in rows.all()}


async def measure(
    conn: AsyncConnection, predicate: str, identity: ModelIdentity, kind: IndexKind
) -> EfFit:
    """Measure the own index of this predicate and kind (on alias `c`; valid, in the caller's
    transaction) at each candidate against the exact scan, in a savepoint rolled back after
    (its settings end with it)."""
    savepoint = await conn.begin_nested()
    try:
        await lift_statement_budget(conn)
        ids = list((await conn.execute(text(_sample_sql(predicate)))).scalars())
        truth = await _nearest(conn, predicate, identity, ids, None, kind)
        truth = {sample: near for sample, near in truth.items() if near}
        recalls: dict[int, list[float]] = {}
        for ef in FIT_CANDIDATES:
            found = await _nearest(conn, predicate, identity, ids, ef, kind)
            recalls[ef] = [
                len(found.get(sample, set()) & near) / len(near) for sample, near in truth.items()
            ]
    finally:
        await savepoint.rollback()
    return EfFit(len(truth), recalls, chosen(recalls))


async def fit(
    conn: AsyncConnection,
    account_id: UUID,
    identity: ModelIdentity,
    predicate: str,
    kind: IndexKind,
) -> EfFit:
    """Measure the account's own index (its predicate on alias `c`, its kind) and register what it
    chose beside it. A measurement that fails (out of memory, say) fits nothing and says why:
    the fit is an optimisation, and the build or the import it follows stands without it."""
    try:
        made = await measure(conn, predicate, identity, kind)
    except DBAPIError as exc:
        made = EfFit(0, {}, None, getattr(exc.orig, "sqlstate", None) or type(exc.orig).__name__)
    await conn.execute(
        text(
            "UPDATE account_model_indexes SET ef_search = :ef, ef_fit = CAST(:fit AS jsonb) "
            "WHERE account_id = :account_id AND model_identity = :identity"
        ),
        {
            "ef": made.ef_search,
            "fit": json.dumps(made.summary()),
            "account_id": account_id,
            "identity": str(identity),
        },
    )
    return made
