"""An automated accessibility audit (axe-core, vendored with the tests): no serious or critical
violation on the sign-in page, the list, a search (both kinds of results; its legs, its marked
words, the nearest offered when nothing was close enough), and a session with the panel open
(filtered, with its timeline; its nearest offered)."""

from __future__ import annotations

import pytest
from playwright.async_api import Browser, expect
from sqlalchemy.ext.asyncio import AsyncEngine

from tests.support.console_browser import CONSOLE, corpus, new_tab, open_panel
from tests.support.console_worlds import (
    DENSE_MODEL,
    QUESTION,
    described_world,
    far_world,
    recurring_world,
)

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
    await expect(tab.page.locator(".found-body")).to_have_attribute("aria-busy", "false")
    audited["search"] = await tab.axe_violations()

    await tab.open(f"{CONSOLE}?sessionId={c.viewed}#activity-{c.probe_activity}")
    await open_panel(tab)
    await expect(tab.page.locator(".neighbour")).to_have_count(3)
    await expect(tab.page.locator(".entry[aria-current]")).to_have_count(1)
    audited["session, panel open, a step marked"] = await tab.axe_violations()

    assert {page: v for page, v in audited.items() if v} == {}
    assert tab.problems == []


@pytest.mark.parametrize(("width", "height"), [(1280, 800), (390, 844)])
async def test_no_serious_or_critical_violation_on_the_views_of_issue_17(
    engine: AsyncEngine, browser: Browser, base_url: str, width: int, height: int
) -> None:
    """A search with both kinds of results; the panel filtered, with its timeline and the
    bound's note, and the typed status shown."""
    described = await described_world(engine)
    recurring = await recurring_world(engine, repeats=12)
    audited = {}

    tab = await new_tab(browser, base_url, width=width, height=height)
    await tab.sign_in(described.key, f"{CONSOLE}?q={QUESTION}")
    await expect(tab.page.locator(".found")).to_have_count(2)
    audited["search, both sections"] = await tab.axe_violations()
    assert tab.problems == []

    tab = await new_tab(browser, base_url, width=width, height=height)
    await tab.sign_in(recurring.key, f"{CONSOLE}?sessionId={recurring.viewed}&similar=open")
    await expect(tab.page.locator(".timeline-note")).to_be_visible()
    audited["panel, timeline bounded"] = await tab.axe_violations()
    await tab.page.get_by_label("Neighbours' status").select_option("failed")
    await tab.page.get_by_role("button", name="Apply").click()
    await expect(tab.page.locator("#similar-body .degraded").first).to_be_visible()
    audited["panel filtered"] = await tab.axe_violations()
    await tab.page.get_by_label("Neighbours' status").select_option(label="Another status…")
    await expect(tab.page.get_by_label("Status", exact=True)).to_be_visible()
    audited["panel, a status to type"] = await tab.axe_violations()

    assert {page: v for page, v in audited.items() if v} == {}
    assert tab.problems == []


@pytest.mark.parametrize(("width", "height"), [(1280, 800), (390, 844)])
async def test_no_serious_or_critical_violation_on_the_views_of_issue_26(
    engine: AsyncEngine, browser: Browser, base_url: str, width: int, height: int
) -> None:
    """A search whose dense leg failed (its legs line, its marked words); a search with
    nothing close enough (the nearest, loose); the panel offering its nearest."""
    dense_failed = await described_world(engine, model=DENSE_MODEL)
    lexical = await described_world(engine)
    far = await far_world(engine)
    audited = {}

    tab = await new_tab(browser, base_url, width=width, height=height)
    await tab.sign_in(dense_failed.key, f"{CONSOLE}?q={QUESTION}")
    await expect(tab.page.locator(".found .passage mark").first).to_be_visible()
    await expect(tab.page.locator(".legs")).to_be_visible()
    audited["search, words only, marked"] = await tab.axe_violations()
    assert tab.problems == []

    tab = await new_tab(browser, base_url, width=width, height=height)
    await tab.sign_in(lexical.key, f"{CONSOLE}?q=the customer wants a seat upgrade")
    await expect(tab.page.locator(".nearest").first).to_be_visible()
    audited["search, nothing close enough"] = await tab.axe_violations()
    assert tab.problems == []

    tab = await new_tab(browser, base_url, width=width, height=height)
    await tab.sign_in(far.key, f"{CONSOLE}?sessionId={far.viewed}&similar=open")
    await expect(tab.page.locator(".nearest")).to_have_count(3)
    audited["panel, nearest offered"] = await tab.axe_violations()

    assert {page: v for page, v in audited.items() if v} == {}
    assert tab.problems == []
