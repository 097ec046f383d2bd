"""The console's "Alerts" page (issue #58): the account's rules and their latest deliveries
(state, attempts, next try), for a key with the manage_alerts scope, and a sentence for one
without; and on the failure modes page, the cards of the groups an alert told say so."""

from __future__ import annotations

import pytest
from playwright.async_api import Browser, expect
from sqlalchemy.ext.asyncio import AsyncEngine

from alerts import manage
from alerts.delivery import DeliveryConfig
from alerts.rules import RuleSpec
from alerts.urls import AllowedHosts
from alerts.worker import AlertConfig, AlertWorker
from data.accounts import principal_for_key
from data.import_rows import add_api_keys
from resolvers.services import Services
from resolvers.tuning import Tuning
from tests.support.console_browser import CONSOLE, new_tab
from tests.support.failures import lexical_failures
from tests.support.receiver import receiving

pytestmark = pytest.mark.browser
SECRET = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
ALLOWED = AllowedHosts.parse("127.0.0.1")
MANAGER = "sk-test-alert-manager"


async def alerted_world(engine: AsyncEngine) -> str:
    """The lexical failures, a rule telling new groups of 3 in a week, its alerts delivered;
    the key of the account's manager."""
    key, _ = await lexical_failures(engine)
    principal = await principal_for_key(engine, key)
    assert principal is not None
    async with engine.begin() as conn:
        await add_api_keys(
            conn, principal.account_id, [(MANAGER, [*principal.scopes, "manage_alerts"])]
        )
    with receiving() as receiver:
        spec = RuleSpec("new", receiver.url, SECRET, window_hours=24 * 7)
        await manage.add_rule(engine, principal.account_id, spec, ALLOWED)
        delivery = DeliveryConfig(ALLOWED, 5.0, 0.05, 5)
        alerts = AlertWorker(Services(engine, Tuning()), AlertConfig(1.0, "http://c", delivery))
        assert len(await alerts.evaluate(principal.account_id)) == 2  # payment and seats: new
        assert await alerts.deliver_due() == 2
    return key


async def test_the_alerts_page_lists_rules_and_deliveries_and_cards_say_alerted(
    engine: AsyncEngine, browser: Browser, base_url: str
) -> None:
    viewer_key = await alerted_world(engine)
    tab = await new_tab(browser, base_url)
    await tab.sign_in(MANAGER)
    await tab.page.get_by_role("link", name="Alerts").click()
    await expect(tab.page.get_by_role("heading", name="Alerts", level=1)).to_be_visible()
    rule = tab.page.locator(".alert-rule")
    await expect(rule).to_have_count(1)
    await expect(rule).to_contain_text("New group: 3 sessions in 168 h (failed)")
    await expect(rule).to_contain_text("Enabled")
    await expect(tab.page.locator(".alert-delivery")).to_have_count(2)
    states = await tab.page.locator(".alert-delivery .state").all_inner_texts()
    assert states == ["delivered", "delivered"]
    assert await tab.axe_violations() == []  # no serious or critical violation
    await tab.page.goto(f"{base_url}{CONSOLE}?failureModes=7")
    await expect(tab.page.locator(".failure-card")).to_have_count(3)
    alerted = await tab.page.locator(".failure-card .alerted").count()
    assert alerted == 2  # the two new groups told; the recurring one not
    assert await tab.axe_violations() == []
    assert tab.problems == []
    other = await new_tab(browser, base_url)  # a key without the scope is told so
    await other.sign_in(viewer_key, f"{CONSOLE}?alerts")
    await expect(
        other.page.get_by_text("This API key lacks the manage_alerts scope.")
    ).to_be_visible()
    assert other.problems == []
