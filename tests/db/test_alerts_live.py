"""Alerts as they run: `index --watch` embeds failed sessions as they are written and tells
the receiver once the third one makes a new group; and a watching indexer killed (SIGKILL)
while its receiver holds the delivery leaves the alert to the next one, which resends it with
the same webhook-id."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import threading
import uuid
from datetime import timedelta
from pathlib import Path

from sqlalchemy.ext.asyncio import AsyncEngine
from standardwebhooks.webhooks import Webhook

from alerts import manage
from alerts.delivery import DeliveryConfig
from alerts.rules import RuleSpec
from alerts.urls import AllowedHosts
from alerts.worker import AlertConfig, AlertWorker
from indexer.embedders import DEFAULT_MODEL, Registry
from indexer.passes import IndexerConfig
from indexer.watching import watch
from indexer.worker import index_once
from resolvers.services import Services
from resolvers.tuning import Tuning
from tests.support.failures import FAILURE_TEXTS, _told, at
from tests.support.receiver import Receiver, receiving
from tests.support.world import World

SECRET = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
ALLOWED = AllowedHosts.parse("127.0.0.1")
ROOT = Path(__file__).resolve().parents[2]


async def lexical_account(engine: AsyncEngine) -> str:
    """An account on the default (lexical) model with completed sessions of days before;
    indexed, so it has its fit."""
    world = World()
    account, _ = world.account("live alerts", model=str(DEFAULT_MODEL))
    for s, city in enumerate(("Oslo", "Lima", "Perth", "Quito", "Dakar", "Hanoi")):
        sid = world.session(account, f"Weather {city}", status="completed")
        started = at(2 + s)
        world.lines[-1]["started_at"] = started.isoformat()
        world.lines[-1]["last_activity_at"] = (started + timedelta(hours=1)).isoformat()
        world.activity(sid, 0, f"Forecast for {city} tomorrow?", occurred_at=started)
        world.activity(
            sid,
            1,
            f"Sunny in {city}, twenty degrees, light wind.",
            role="assistant",
            occurred_at=started + timedelta(minutes=1),
        )
    await world.write(engine)
    await index_once(engine, Registry(), IndexerConfig(progress=False))
    return account


async def payment_failure(engine: AsyncEngine, account: str, n: int) -> None:
    world = World()
    title = f"Payment failure {n}"
    _told(world, account, title, 0.01 * (n + 1), FAILURE_TEXTS["payment"].format(n=500 + n))
    await world.write(engine)


async def until(receiver: Receiver, count: int, seconds: float = 90.0) -> None:
    for _ in range(int(seconds / 0.1)):
        if len(receiver.received) >= count:
            return
        await asyncio.sleep(0.1)
    raise AssertionError(f"{len(receiver.received)} request(s) received, {count} awaited")


async def add_rule(engine: AsyncEngine, account: str, url: str) -> None:
    spec = RuleSpec("new", url, SECRET)
    await manage.add_rule(engine, uuid.UUID(account), spec, ALLOWED)


async def test_the_watching_indexer_tells_the_third_failure_of_a_new_kind(
    engine: AsyncEngine,
) -> None:
    account = await lexical_account(engine)
    delivery = DeliveryConfig(ALLOWED, 5.0, 0.05, 5)
    alerts = AlertWorker(Services(engine, Tuning()), AlertConfig(0.2, "http://c", delivery))
    stop = asyncio.Event()
    with receiving() as receiver:
        await add_rule(engine, account, receiver.url)
        config = IndexerConfig(progress=False, refit_growth_percent=1, refit_min_interval_s=0)
        watching = asyncio.ensure_future(watch(engine, Registry(), config, 0.2, stop, alerts))
        try:
            for n in range(3):
                await payment_failure(engine, account, n)
                await asyncio.sleep(1.0)  # a pass or more between them
            await until(receiver, 1)
            await asyncio.sleep(1.0)  # time for a second alert, which must not come
        finally:
            stop.set()
            await watching
    (got,) = receiver.received
    payload = Webhook(SECRET).verify(got.body, got.headers)
    assert payload["type"] == "failure_mode.new"
    assert payload["data"]["member_count"] == 3
    assert payload["data"]["representative"]["title"].startswith("Payment failure")
    assert alerts.cost.accounts >= 1


def indexer(database_url: str) -> subprocess.Popen[bytes]:
    env = {
        "DATABASE_URL": database_url,
        "PATH": "/usr/bin:/bin",
        "SIMILAR_SESSIONS_ALERT_ALLOW_HOSTS": "127.0.0.1",
        "SIMILAR_SESSIONS_ALERT_INTERVAL_S": "0.5",
        "SIMILAR_SESSIONS_ALERT_TIMEOUT_S": "1",
        "SIMILAR_SESSIONS_INDEX_INTERVAL_S": "1",
        # the fit learns the new failures' words at once (a refit every pass that grew)
        "SIMILAR_SESSIONS_LEXICAL_REFIT_GROWTH_PERCENT": "1",
        "SIMILAR_SESSIONS_LEXICAL_REFIT_MIN_INTERVAL_S": "0",
        "PYTHONPATH": str(ROOT),
    }
    command = [sys.executable, "-m", "similar_sessions.cli", "index", "--watch"]
    return subprocess.Popen(command, env=env, cwd=ROOT, stderr=subprocess.DEVNULL)


async def test_an_indexer_killed_mid_delivery_is_followed_by_a_resend_with_the_same_id(
    engine: AsyncEngine, database_url: str
) -> None:
    account = await lexical_account(engine)
    with receiving() as receiver:
        receiver.hold = threading.Event()  # the first delivery is held, unanswered
        await add_rule(engine, account, receiver.url)
        for n in range(3):
            await payment_failure(engine, account, n)
        first = indexer(database_url)
        try:
            await until(receiver, 1)
        finally:
            os.kill(first.pid, signal.SIGKILL)  # mid-delivery: nothing recorded its outcome
            first.wait(30)
        receiver.hold.set()  # the next one is answered at once
        second = indexer(database_url)
        try:
            await until(receiver, 2)
        finally:
            second.terminate()
            second.wait(30)
    ids = [r.headers["webhook-id"] for r in receiver.received]
    assert len(ids) == 2 and ids[0] == ids[1]
    assert receiver.received[0].body == receiver.received[1].body
