"""A crowded world of failures for the failure-modes tests, its exact reference (independent
exact scans, grouped by the pure rule, resolvers/rules/failure_groups.py, tested on its own),
and the use case asked in process on a chosen lookup path."""

from __future__ import annotations

import secrets
import uuid
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

import numpy as np
import sqlalchemy as sa
from sqlalchemy.ext.asyncio import AsyncEngine

from data.accounts import Principal
from resolvers.arguments import FAILURE_ARGUMENTS, FailureArgs
from resolvers.context import Context
from resolvers.cursors import Cursors
from resolvers.failure_modes import failure_modes
from resolvers.failure_results import FailureModesResult
from resolvers.rules import failure_groups, ranking
from resolvers.services import Services
from resolvers.tuning import Tuning
from tests.support.crowded import contract_probes
from tests.support.world import World, blend, direction

NOW = datetime.now(UTC)
WINDOW_DAYS = 7
RELATED = 0.5  # the contract's cut point: hash-384 has no calibration
CURSORS = Cursors(secrets.token_bytes(32))
NAMES = {a.field: a.param for a in FAILURE_ARGUMENTS}

# Per probe, the 25 nearest failed passages of the account in the window (the links' lookup).
LINK_SCAN = """
SELECT c.id, c.runtime_session_id, 1 - ((c.embedding::vector(384)) <=> (p.embedding::vector(384)))
FROM session_chunks c
JOIN runtime_sessions s ON s.account_id = c.account_id AND s.id = c.runtime_session_id
JOIN session_chunks p ON p.account_id = c.account_id AND p.id = :probe
WHERE c.account_id = :account AND c.runtime_session_id <> p.runtime_session_id
  AND c.embedding_model = p.embedding_model
  AND c.redaction_state = 'clear' AND c.embedding_state = 'embedded'
  AND s.status = ANY(:statuses) AND c.occurred_at >= :cutoff
  AND 1 - ((c.embedding::vector(384)) <=> (p.embedding::vector(384))) >= 0.35
ORDER BY (c.embedding::vector(384)) <=> (p.embedding::vector(384)), c.id
LIMIT 25
"""
# Whether any passage of a session that started before the window is related to the probe.
EARLIER_SCAN = """
SELECT EXISTS (SELECT 1 FROM session_chunks c
  JOIN runtime_sessions s ON s.account_id = c.account_id AND s.id = c.runtime_session_id
  JOIN session_chunks p ON p.account_id = c.account_id AND p.id = :probe
  WHERE c.account_id = :account AND c.runtime_session_id <> p.runtime_session_id
    AND c.embedding_model = p.embedding_model
    AND c.redaction_state = 'clear' AND c.embedding_state = 'embedded'
    AND s.started_at < :before
    AND 1 - ((c.embedding::vector(384)) <=> (p.embedding::vector(384))) >= :related)
"""


@dataclass
class Failures:
    """The world's account, its key, and its sessions by name."""

    account: str
    key: str
    sessions: dict[str, str] = field(default_factory=dict)


def at(days_ago: float) -> datetime:
    return NOW - timedelta(days=days_ago)


def add_session(
    world: World,
    account: str,
    name: str,
    days_ago: float,
    vectors: list[list[float]],
    status: str = "failed",
) -> str:
    """A session that started `days_ago` days ago, its passages a minute apart."""
    sid = world.session(account, name, status=status)
    started = at(days_ago)
    world.lines[-1]["started_at"] = started.isoformat()
    world.lines[-1]["last_activity_at"] = (started + timedelta(hours=1)).isoformat()
    for i, vector in enumerate(vectors):
        world.chunk(
            sid,
            vector,
            index=i,
            occurred_at=started + timedelta(minutes=i),
            content=f"{name} passage {i}: the deploy failed with lock timeout on orders",
        )
    return sid


def topic_vectors(
    topic: np.ndarray, seed: int, n: int = 3, weight: float = 0.2
) -> list[list[float]]:
    return [blend(topic, direction(seed * 100 + i), weight) for i in range(n)]


def crowd(world: World, topics: list[np.ndarray], accounts: int = 3) -> None:
    """Other accounts' failures, in the window and before it, nearer each topic than the
    account's own sessions are to each other."""
    for a in range(accounts):
        other, _ = world.account(f"crowd {a}")
        for t, topic in enumerate(topics):
            for s in range(6):
                vectors = topic_vectors(topic, 90_000 + 1000 * a + 100 * t + s, 4, 0.05)
                add_session(world, other, f"crowd {a}.{t}.{s}", 0.5 + s, vectors)
                add_session(world, other, f"crowd old {a}.{t}.{s}", 20 + s, vectors)


async def failures_world(engine: AsyncEngine, crowded: bool = True) -> Failures:
    """Recurring groups (an earlier failure, an earlier completed session), new ones (a
    chain of sessions linked end to end only through each other, a clique, a session of its
    own, one whose earlier twin is only loosely like it), sessions of other statuses in the
    window, a failure not yet embedded, and (crowded) other accounts' copies of it all."""
    world = World()
    account, key = world.account("failures")
    found = Failures(account, key)
    topics = [direction(7000 + t) for t in range(6)]
    a, b, c, d, e, g = topics

    def add(name: str, days_ago: float, vectors: list[list[float]], status: str = "failed") -> None:
        found.sessions[name] = add_session(world, account, name, days_ago, vectors, status)

    for s in range(4):
        add(f"a{s}", 0.5 + s, topic_vectors(a, 10 + s, 15 if s == 0 else 3))  # a0: sampled
    add("a earlier", 20, topic_vectors(a, 19))
    add("a completed now", 1.5, topic_vectors(a, 18), status="completed")
    for s in range(3):
        add(f"b{s}", 1 + s, topic_vectors(b, 20 + s))
    add("b earlier completed", 30, topic_vectors(b, 29), status="completed")
    for s in range(3):
        add(f"c{s}", 2 + s, topic_vectors(c, 30 + s))
    add("c completed now", 3, topic_vectors(c, 39), status="completed")
    for s, t in enumerate(np.linspace(0.0, 1.0, 6)):
        chain = (1 - t) * d / np.linalg.norm(d) + t * e / np.linalg.norm(e)
        add(f"chain{s}", 0.2 + s, topic_vectors(chain, 40 + s, 2, 0.1))
    add("alone", 4.5, topic_vectors(direction(7100), 50))
    add("g0", 2.5, topic_vectors(g, 60))
    add("g1", 5.5, topic_vectors(g, 61))
    add("g loosely earlier", 15, topic_vectors(g, 69, 3, 0.7))
    add("old failure", 12, topic_vectors(direction(7200), 70))
    found.sessions["pending"] = add_session(world, account, "pending", 3.5, [])
    world.chunk(found.sessions["pending"], None, index=0, occurred_at=at(3.5))
    if crowded:
        crowd(world, topics)
    await world.write(engine)
    return found


def context_of(engine: AsyncEngine, account: str, tuning: Tuning) -> Context:
    """A request's context for the account, on `engine`, with these knobs."""
    principal = Principal(uuid.UUID(account), "failures", frozenset(), frozenset())
    return Context.of(Services(engine, tuning), principal, CURSORS)


async def ask(
    engine: AsyncEngine, account: str, tuning: Tuning | None = None, **args: Any
) -> FailureModesResult:
    """The use case as a request runs it (texts and terms not asked)."""
    values = {"window_days": WINDOW_DAYS, "limit": 20, **args}
    checked = FailureArgs.checked(
        values, names=NAMES, account_id=uuid.UUID(account), cursors=CURSORS
    )
    context = context_of(engine, account, tuning or Tuning())
    return await failure_modes(context, checked, False)


@dataclass(frozen=True)
class Reference:
    groups: set[frozenset[uuid.UUID]]
    new: dict[frozenset[uuid.UUID], bool]
    ties: dict[uuid.UUID, int]


async def exact_reference(
    engine: AsyncEngine, account: str, window_days: int, statuses: list[str]
) -> Reference:
    """The groups by independent exact scans: each member's neighbours (25 nearest failed
    passages of the window per probe, ranked by the contract), every one a link, grouped by
    the rule; and isNew by asking whether any probe of any member has a related passage of a
    session before the window."""
    cutoff = NOW - timedelta(days=window_days)
    async with engine.connect() as conn:
        members = {
            r[0]: r[1]
            for r in await conn.execute(
                sa.text(
                    "SELECT s.id, s.started_at FROM runtime_sessions s WHERE s.account_id = :a "
                    "AND s.status = ANY(:st) AND s.started_at >= :c AND EXISTS (SELECT 1 FROM "
                    "session_chunks c WHERE c.account_id = s.account_id AND "
                    "c.runtime_session_id = s.id AND c.embedding_state = 'embedded' "
                    "AND c.redaction_state = 'clear')"
                ),
                {"a": account, "st": statuses, "c": cutoff},
            )
        }
        links: list[failure_groups.Link] = []
        earlier: set[uuid.UUID] = set()
        for m in members:
            probes = await contract_probes(conn, str(m))
            hits = []
            for n, probe in enumerate(probes):
                params = {"probe": probe, "account": account, "statuses": statuses}
                rows = await conn.execute(sa.text(LINK_SCAN), {**params, "cutoff": cutoff})
                hits += [ranking.Hit(n, r[0], r[1], float(r[2])) for r in rows]
                again = {"probe": probe, "account": account, "before": cutoff}
                if (
                    await conn.execute(sa.text(EARLIER_SCAN), {**again, "related": RELATED})
                ).scalar():
                    earlier.add(m)
            for neighbour in ranking.rank_neighbours(hits, 1):
                match = neighbour.matches[0]
                links.append(
                    failure_groups.Link(
                        m,
                        neighbour.session_id,
                        neighbour.similarity,
                        probes[match.probe],
                        match.chunk_id,
                        neighbour.score,
                    )
                )
    grouped = failure_groups.groups_of(members, links, frozenset(), dict.fromkeys(members, RELATED))
    groups = {frozenset(x.session_id for x in g.members) for g in grouped}
    new = {g: not (g & earlier) for g in groups}
    return Reference(groups, new, {x.session_id: x.ties for g in grouped for x in g.members})


# Failures of three kinds, told in words: what the lexical model's fit and the shared terms
# are made from (the console's tests and screenshots).
FAILURE_TEXTS = {
    "payment": (
        "Checkout failed: the payment gateway timed out after 30 seconds while charging card "
        "{n}. The agent retried the charge and the gateway refused it again."
    ),
    "seats": (
        "Seat selection crashed: the seat map for flight HAT{n} came back with an empty cabin, "
        "so the agent could not assign the window seat the customer asked for."
    ),
    "refund": (
        "Refund stuck: the refund for reservation ZF{n} stayed pending because the original "
        "payment method was a gift card that had expired."
    ),
}


async def lexical_failures(
    engine: AsyncEngine, per_kind: int = 4
) -> tuple[str, dict[str, list[str]]]:
    """An account on the default (lexical) model with failed sessions of three kinds in the
    last week, one of them also failing a month ago, and completed sessions between;
    indexed, so the account has its fit. Its key, and its failed sessions by kind."""
    from indexer.embedders import DEFAULT_MODEL, Registry
    from indexer.passes import IndexerConfig
    from indexer.worker import index_once

    world = World()
    account, key = world.account("failures", model=str(DEFAULT_MODEL))
    made: dict[str, list[str]] = {kind: [] for kind in FAILURE_TEXTS}
    n = 0
    for kind, text in FAILURE_TEXTS.items():
        for s in range(per_kind):
            n += 1
            days_ago = 0.3 + 1.4 * s + 0.2 * len(made[kind])
            sid = _told(
                world,
                account,
                f"{kind.capitalize()} failure {s + 1}",
                days_ago,
                text.format(n=100 + n),
            )
            made[kind].append(sid)
    _told(world, account, "Refund failure last month", 32, FAILURE_TEXTS["refund"].format(n=999))
    for s in range(3):
        _told(
            world,
            account,
            f"Booking {s + 1}",
            2 + s,
            "Booked a flight to Seattle for May 20th.",
            "completed",
        )
    await world.write(engine)
    await index_once(engine, Registry(), IndexerConfig(progress=False))
    return key, made


def _told(
    world: World, account: str, title: str, days_ago: float, text: str, status: str = "failed"
) -> str:
    sid = world.session(account, title, status=status)
    started = at(days_ago)
    world.lines[-1]["started_at"] = started.isoformat()
    world.lines[-1]["last_activity_at"] = (started + timedelta(hours=1)).isoformat()
    world.activity(sid, 0, f"I need help: {title.lower()}.", occurred_at=started)
    world.activity(sid, 1, text, role="assistant", occurred_at=started + timedelta(minutes=1))
    return sid
