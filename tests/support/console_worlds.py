"""Worlds for the console's issue #17 views: neighbours of several statuses, a failure that
recurred over weeks, sessions found by describing what happened; and the API's own answer, asked
over HTTP, for the browser tests to compare what the console shows against."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import httpx
from sqlalchemy.ext.asyncio import AsyncEngine

from indexer import lexical
from indexer.embedders import BUILTIN, Registry
from indexer.lexical import LexicalEmbedder
from tests.support.embedders import WordsEmbedder
from tests.support.world import World, blend, direction

# The described sessions' model: the lexical default without a fit (every feature weighs 1).
MODEL = str(lexical.UNFITTED)
# A model that is not lexical, so a search's dense leg runs in it (when the server has it).
DENSE_MODEL = str(WordsEmbedder().identity)
EMBEDDERS = {MODEL: LexicalEmbedder(), DENSE_MODEL: WordsEmbedder()}


def embedded(text: str, model: str = MODEL) -> list[float]:
    """The vector `model` gives `text`, as the indexer would."""
    return [float(x) for x in EMBEDDERS[model].vector(text)]


class PricedWordsEmbedder(WordsEmbedder):
    usd_per_1k_tokens = 1.0  # a hosted model's price: a search text counts against the cap


def with_dense_model(*, priced: bool = False) -> Registry:
    """The app's embedders and DENSE_MODEL's: a server whose searches run the dense leg (or,
    `priced`, count its text against the account's daily cap)."""
    return Registry({**BUILTIN, DENSE_MODEL: PricedWordsEmbedder if priced else WordsEmbedder})


async def ask(base: str, key: str, query: str, **variables: Any) -> Any:
    """The API's answer to `query`, asked as any client would (no browser)."""
    async with httpx.AsyncClient(base_url=base) as client:
        response = await client.post(
            "/graphql",
            json={"query": query, "variables": variables},
            headers={"authorization": f"Bearer {key}"},
        )
    body = response.json()
    assert response.status_code == 200 and "errors" not in body, body
    return body["data"]


@dataclass
class Statuses:
    key: str
    viewed: str
    titles: dict[str, list[str]]  # status -> its neighbours' titles, closest first


async def statuses_world(engine: AsyncEngine) -> Statuses:
    """A failed session and five neighbours: two failed, two completed, one timed out."""
    world = World()
    account, key = world.account()
    topic = direction(21)
    viewed = world.session(account, "Migration failed: lock timeout", day=20, status="failed")
    world.chunk(viewed, blend(topic, direction(22), 0.0), content="lock timeout on orders")
    titles: dict[str, list[str]] = {}
    neighbours = [
        ("Migration failed again", "failed", 0.10),
        ("Migration passed after a retry", "completed", 0.15),
        ("Migration failed in staging", "failed", 0.30),
        ("Migration timed out", "timeout", 0.45),
        ("Unrelated billing question", "completed", 0.60),
    ]
    for n, (title, status, weight) in enumerate(neighbours):
        other = world.session(account, title, day=10 + n, status=status)
        world.chunk(other, blend(topic, direction(30 + n), weight), content=f"{title}.")
        titles.setdefault(status, []).append(title)
    await world.write(engine)
    return Statuses(key, viewed, titles)


@dataclass
class Recurring:
    key: str
    viewed: str
    related: int  # sessions at "related" or closer: what the timeline counts


async def recurring_world(engine: AsyncEngine, repeats: int = 1) -> Recurring:
    """A failure seen again over eleven weeks and three months (some days twice; every other
    one failed), one loose look-alike the timeline leaves out, another account's copy of it."""
    world = World()
    account, key = world.account()
    topic = direction(3)
    viewed = world.session(account, "The failure", day=90, status="failed")
    for i in range(4):
        world.chunk(viewed, blend(topic, direction(10 + i), 0.1), index=i)
    days = [(0, 0.2), (0, 0.3), (2, 0.25), (9, 0.2), (30, 0.3), (31, 0.2), (75, 0.25)]
    for n, (day, weight) in enumerate(days):
        for r in range(repeats):
            status = "failed" if n % 2 == 0 else "completed"
            again = world.session(account, f"Again {n}.{r}", day=day, status=status)
            for i in range(3):
                vector = blend(topic, direction(100 + 30 * n + 3 * r + i), weight)
                world.chunk(again, vector, index=i)
    loose = world.session(account, "Only loosely like it", day=40)
    world.chunk(loose, blend(topic, direction(900), 0.8))
    elsewhere, _ = world.account("elsewhere")
    copy = world.session(elsewhere, "Their failure", day=50)
    world.chunk(copy, blend(topic, direction(999), 0.1))
    await world.write(engine)
    return Recurring(key, viewed, len(days) * repeats)


QUESTION = "the migration failed with a lock timeout on the orders table"
MIGRATION = "the database migration failed: lock timeout on table orders, rolled back"


@dataclass
class Described:
    key: str
    migrations: list[str]  # sessions of the described failure
    turns: dict[str, str]  # session id -> the replay turn its passage came from
    other: str  # a session on another subject


async def described_world(
    engine: AsyncEngine,
    *,
    migrations: int = 2,
    enabled: bool = True,
    features: tuple[str, ...] = ("similarSessions",),
    passage: str = MIGRATION,
    title: str = "Nightly job",
    model: str = MODEL,
    daily_cap_usd: float | None = 5.0,
) -> Described:
    """Sessions whose passages describe the same failure in words (embedded by `model` as the
    indexer would), one about something else, and another account with the closest passage of
    all."""
    world = World()
    account, key = world.account(
        enabled=enabled, features=features, model=model, daily_cap_usd=daily_cap_usd
    )
    found, turns = [], {}
    for n in range(migrations):
        sid = world.session(account, f"{title} #{n}", day=n, status="failed")
        world.activity(sid, 0, "Starting the nightly job.", role="assistant")
        text = f"{passage} (attempt {n})"
        turn = world.activity(sid, 1, text, role="tool", kind="tool_result")
        world.chunk(sid, embedded(text, model), source_id=turn, content=text, model=model)
        found.append(sid)
        turns[sid] = turn
    other = world.session(account, "Refund to a card", day=50)
    refund = "a refund to the card for a cancelled flight"
    world.chunk(other, embedded(refund, model), content="refund", model=model)
    elsewhere, _ = world.account("elsewhere", model=model)
    theirs = world.session(elsewhere, "Their migration")
    world.chunk(theirs, embedded(QUESTION, model), content=QUESTION, model=model)
    await world.write(engine)
    return Described(key, found, turns, other)


@dataclass
class Far:
    key: str
    viewed: str
    passages: dict[str, str]  # each other session's title -> its passage; all below the floor


async def far_world(engine: AsyncEngine) -> Far:
    """A viewed session and three others, none close enough to pass the floor: the panel has
    no neighbour, only the nearest sessions to offer, loose."""
    world = World()
    account, key = world.account()
    topic = direction(41)
    viewed = world.session(account, "Checkout failed: card declined", day=9, status="failed")
    world.chunk(viewed, blend(topic, direction(42), 0.0), content="the card was declined")
    passages = {}
    for n, weight in enumerate((0.75, 0.85, 0.95)):
        title, passage = f"Far from it #{n}", f"a passage about something else ({n})"
        other = world.session(account, title, day=n, status="completed")
        world.chunk(other, blend(topic, direction(50 + n), weight), content=passage)
        passages[title] = passage
    await world.write(engine)
    return Far(key, viewed, passages)
