"""Alerts end to end on a real database and a real receiver on loopback (allowed by the
setting): `new` and `surge` decided over failureModes' grouping, delivered as Standard
Webhooks that verify with the library, retried and the rule disabled, resent after a
deliverer dies, refused where the URL rules say, and one account's rules blind to another's
sessions."""

from __future__ import annotations

import asyncio
import json
import threading
import uuid
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from typing import Any

import sqlalchemy as sa
from sqlalchemy.ext.asyncio import AsyncEngine
from standardwebhooks.webhooks import Webhook

from alerts import manage
from alerts.delivery import DeliveryConfig
from alerts.rules import RuleSpec
from alerts.urls import AllowedHosts
from alerts.worker import LEASE_TIMEOUTS, AlertConfig, AlertWorker
from data import alert_deliveries as outbox
from resolvers.services import Services
from resolvers.tuning import Tuning
from tests.support.failures import add_session, topic_vectors
from tests.support.receiver import receiving
from tests.support.world import World, direction

SECRET = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
ALLOWED = AllowedHosts.parse("127.0.0.1")
# A credential in a title: the payload shows it masked, as every answer does.
LEAKED = "AKIAIOSFODNN7EXAMPLE"


def worker(
    engine: AsyncEngine,
    timeout_s: float = 5.0,
    max_failures: int = 5,
    allowed: AllowedHosts = ALLOWED,
) -> AlertWorker:
    delivery = DeliveryConfig(allowed, timeout_s, 0.05, max_failures)
    config = AlertConfig(0.05, "https://console.example.com", delivery)
    return AlertWorker(Services(engine, Tuning()), config)


async def account(engine: AsyncEngine, name: str = "alerts") -> str:
    world = World()
    account_id, _ = world.account(name)
    other = add_session(world, account_id, "old", 20, topic_vectors(direction(9100), 1))
    assert other
    await world.write(engine)
    return account_id


async def fail(engine: AsyncEngine, account_id: str, name: str, days_ago: float, seed: int) -> str:
    """One failed session like the others of topic A, `days_ago` days ago."""
    world = World()
    sid = add_session(world, account_id, f"{name} {LEAKED}", days_ago, topic_vectors(TOPIC, seed))
    await world.write(engine)
    return sid


TOPIC = direction(8800)


async def rule(engine: AsyncEngine, account_id: str, url: str, **values: Any) -> uuid.UUID:
    spec = RuleSpec(values.pop("kind", "new"), url, SECRET, **values)
    return await manage.add_rule(engine, uuid.UUID(account_id), spec, ALLOWED)


async def deliveries(engine: AsyncEngine) -> list[Any]:
    async with engine.connect() as conn:
        rows = await conn.execute(sa.text("SELECT * FROM alert_deliveries ORDER BY id"))
        return list(rows)


async def test_new_fires_once_at_the_third_session_and_not_on_a_regrouping(
    engine: AsyncEngine,
) -> None:
    account_id = await account(engine)
    alerts = worker(engine)
    with receiving() as receiver:
        await rule(engine, account_id, receiver.url)
        told: list[list[str]] = []
        for n in range(5):
            await fail(engine, account_id, f"a{n}", 0.1 + 0.05 * n, 100 + n)
            told.append(await alerts.evaluate(uuid.UUID(account_id)))
            told.append(await alerts.evaluate(uuid.UUID(account_id)))  # again, nothing new
        assert [len(t) for t in told] == [0, 0, 0, 0, 1, 0, 0, 0, 0, 0]
        assert await alerts.deliver_due() == 1
    (got,) = receiver.received
    payload = Webhook(SECRET).verify(got.body, got.headers)  # raises unless it verifies
    assert got.headers["webhook-id"] == told[4][0]
    data = payload["data"]
    assert payload["type"] == "failure_mode.new" and data["member_count"] == 3
    assert data["console_link"].startswith("https://console.example.com/console/runtime-sessions?")
    assert LEAKED not in got.body.decode()  # masked, in the title and the text
    assert data["representative"]["title"].startswith("a")
    assert payload["text"].startswith("*New failure mode: 3 sessions in 24 h*")


async def test_surge_fires_against_its_baseline(engine: AsyncEngine) -> None:
    account_id = await account(engine)
    alerts = worker(engine)
    with receiving() as receiver:
        await rule(engine, account_id, receiver.url, kind="surge", factor=3.0, baseline_days=7)
        for day in range(7):  # one a day before the last 24 h: a mean of one per window
            await fail(engine, account_id, f"base{day}", 1.5 + day, 200 + day)
        told = []
        for n in range(3):
            await fail(engine, account_id, f"now{n}", 0.1 + 0.05 * n, 300 + n)
            told.append(len(await alerts.evaluate(uuid.UUID(account_id))))
        assert told == [0, 0, 1]
        assert await alerts.evaluate(uuid.UUID(account_id)) == []  # the same episode
        assert await alerts.deliver_due() == 1
    payload = json.loads(receiver.received[0].body)
    assert payload["type"] == "failure_mode.surge"
    assert payload["data"]["recent_members"] == 3
    assert payload["data"]["baseline_mean"] == 1.0


async def three_failures(engine: AsyncEngine, account_id: str) -> None:
    for n in range(3):
        await fail(engine, account_id, f"f{n}", 0.1 + 0.05 * n, 400 + n)


async def test_500s_are_retried_then_the_rule_is_disabled_with_the_reason(
    engine: AsyncEngine,
) -> None:
    account_id = await account(engine)
    alerts = worker(engine, max_failures=5)
    with receiving() as receiver:
        receiver.status, receiver.answer = 500, b"x" * 5000
        rule_id = await rule(engine, account_id, receiver.url)
        await three_failures(engine, account_id)
        (webhook_id,) = await alerts.evaluate(uuid.UUID(account_id))
        for _ in range(400):  # until the fifth failure disables the rule
            await alerts.deliver_due()
            (row,) = await deliveries(engine)
            if row.state != "pending":
                break
            await asyncio.sleep(0.05)
    assert [r.headers["webhook-id"] for r in receiver.received] == [webhook_id] * 5
    assert (row.state, row.attempts, row.last_status) == ("dropped", 5, 500)
    assert len(row.response) == 1024  # at most 1 KB of the answer kept
    (kept,) = await manage.list_rules(engine, uuid.UUID(account_id))
    assert kept.id == rule_id and not kept.enabled
    assert kept.disabled_reason.startswith("5 deliveries failed in a row; the last: HTTP 500")


async def test_a_deliverer_killed_mid_delivery_leaves_it_to_the_next_with_the_same_id(
    engine: AsyncEngine,
) -> None:
    account_id = await account(engine)
    with receiving() as receiver:
        await rule(engine, account_id, receiver.url)
        await three_failures(engine, account_id)
        (webhook_id,) = await worker(engine).evaluate(uuid.UUID(account_id))  # decided, then gone
        dying = worker(engine, timeout_s=0.2)
        async with engine.begin() as conn:  # it takes the alert, and dies before its POST
            lease = dying.config.delivery.timeout_s * LEASE_TIMEOUTS
            taken = await outbox.take_due(conn, datetime.now(UTC), timedelta(seconds=lease), 16)
        assert [t.webhook_id for t in taken] == [webhook_id]
        restarted = worker(engine)
        assert await restarted.deliver_due() == 0  # leased to the one that died
        for _ in range(100):
            if await restarted.deliver_due():
                break
            await asyncio.sleep(0.05)
    assert [r.headers["webhook-id"] for r in receiver.received] == [webhook_id]
    (row,) = await deliveries(engine)
    assert row.state == "delivered" and row.webhook_id == webhook_id


async def test_a_name_that_resolves_to_loopback_is_refused_at_delivery(
    engine: AsyncEngine,
) -> None:
    account_id = await account(engine)
    alerts = worker(engine, allowed=AllowedHosts())  # nothing inward allowed
    with receiving() as receiver:
        # https to a name passes when added; at delivery it resolves to loopback, not allowed
        await rule(engine, account_id, f"https://localhost:{receiver.port}/hook")
        await three_failures(engine, account_id)
        assert len(await alerts.evaluate(uuid.UUID(account_id))) == 1
        assert await alerts.deliver_due() == 1
    assert receiver.received == []
    (row,) = await deliveries(engine)
    assert row.state == "pending" and row.last_status is None
    assert row.last_error.startswith("refused: localhost is at ")
    assert "a loopback, link-local or private address" in row.last_error


async def test_one_accounts_rules_never_see_another_accounts_sessions(
    engine: AsyncEngine,
) -> None:
    mine, theirs = await account(engine, "mine"), await account(engine, "theirs")
    with receiving() as receiver:
        their_rule = await rule(engine, theirs, receiver.url)
        await rule(engine, mine, receiver.url)
        await three_failures(engine, mine)
        assert await worker(engine).evaluate(uuid.UUID(theirs)) == []
        assert len(await worker(engine).evaluate(uuid.UUID(mine))) == 1
    assert not await manage.remove_rule(engine, their_rule, uuid.UUID(mine))
    assert [r.id for r in await manage.list_rules(engine, uuid.UUID(mine))] != [their_rule]
    assert await manage.remove_rule(engine, their_rule, uuid.UUID(theirs))


async def test_an_account_is_evaluated_at_most_once_per_interval(engine: AsyncEngine) -> None:
    account_id = uuid.UUID(await account(engine))
    alerts = worker(engine)
    alerts = AlertWorker(alerts.services, replace(alerts.config, interval_s=3600.0))
    await alerts.after_pass({account_id})  # evaluated: its first
    await alerts.after_pass({account_id})  # within the interval: it waits
    assert alerts.cost.accounts == 1
    assert alerts.pending == {account_id}
    due = alerts.due_in()
    assert due is not None and 3000 < due <= 3600
    alerts.last[account_id] -= 3600  # the interval has passed
    await alerts.after_pass(set())  # the pass after: evaluated though it embedded nothing
    assert alerts.cost.accounts == 2 and alerts.pending == set() and alerts.due_in() is None


async def test_a_redirect_is_not_followed_and_a_silent_receiver_times_out(
    engine: AsyncEngine,
) -> None:
    account_id = await account(engine)
    alerts = worker(engine, timeout_s=0.3)
    with receiving() as elsewhere, receiving() as receiver:
        receiver.status, receiver.location = 307, elsewhere.url
        await rule(engine, account_id, receiver.url)
        await three_failures(engine, account_id)
        (webhook_id,) = await alerts.evaluate(uuid.UUID(account_id))
        assert await alerts.deliver_due() == 1
        (row,) = await deliveries(engine)
        assert (row.state, row.last_status) == ("pending", 307)
        assert row.last_error == "HTTP 307: a redirect (not followed)"
        assert elsewhere.received == []  # the redirect's target never heard of it
        receiver.hold = threading.Event()  # now it takes the POST and never answers
        async with engine.begin() as conn:
            await conn.execute(sa.text("UPDATE alert_deliveries SET next_attempt_at = now()"))
        assert await alerts.deliver_due() == 1
        receiver.hold.set()
    (row,) = await deliveries(engine)
    assert row.attempts == 2 and row.last_status is None
    assert row.last_error.startswith(("ReadTimeout", "TimeoutError"))
    assert [r.headers["webhook-id"] for r in receiver.received] == [webhook_id] * 2
