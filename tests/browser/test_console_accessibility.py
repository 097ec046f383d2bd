"""An automated accessibility audit (axe-core, vendored with the tests): no serious or critical
violation on the sign-in page, the list, a search, and a session with the panel open."""

from __future__ import annotations

import pytest
from playwright.async_api import Browser, expect
from sqlalchemy.ext.asyncio import AsyncEngine

from tests.support.console_browser import CONSOLE, corpus, new_tab, open_panel

pytestmark = pytest.mark.browser


@pytest.mark.parametrize(("width", "height"), [(1280, 800), (390, 844)])
async def test_no_serious_or_critical_violation_on_any_page(
    engine: AsyncEngine, browser: Browser, base_url: str, width: int, height: int
) -> None:
    c = await corpus(engine)
    tab = await new_tab(browser, base_url, width=width, height=height)
    audited = {}

    await tab.open(CONSOLE)
    await expect(tab.page.get_by_role("heading", name="Sign in")).to_be_visible()
    audited["sign-in"] = await tab.axe_violations()

    await tab.page.get_by_label("API key").fill("sk-test-not-a-key")
    await tab.page.keyboard.press("Enter")
    await expect(tab.page.locator("#sign-in-error")).not_to_be_empty()
    audited["refused key"] = await tab.axe_violations()

    await tab.sign_in(c.key)
    await expect(tab.page.locator(".session-link")).to_have_count(4)
    audited["list"] = await tab.axe_violations()

    await tab.open(f"{CONSOLE}?q=refund")
    await expect(tab.page.locator(".session-link")).to_have_count(2)
    audited["search"] = await tab.axe_violations()

    await tab.open(f"{CONSOLE}?sessionId={c.viewed}#activity-{c.probe_activity}")
    await open_panel(tab)
    await expect(tab.page.locator(".neighbour")).to_have_count(3)
    await expect(tab.page.locator(".entry[aria-current]")).to_have_count(1)
    audited["session, panel open, a step marked"] = await tab.axe_violations()

    assert {page: v for page, v in audited.items() if v} == {}
    assert tab.problems == []
