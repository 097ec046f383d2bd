"""The console's pages in Chromium: the session list, a session's header and replay."""

from __future__ import annotations

import re

import pytest
from limits import parse
from playwright.async_api import Route, expect
from sqlalchemy.ext.asyncio import AsyncEngine

from similar_sessions.admission import rate_limited
from tests.support.console_browser import (
    CONSOLE,
    Tab,
    corpus,
)
from tests.support.world import World

pytestmark = pytest.mark.browser


async def test_the_list_is_newest_first_and_paged(engine: AsyncEngine, tab: Tab) -> None:
    world = World()
    account, key = world.account()
    for day in range(21):
        world.session(account, f"session of day {day:02}", day=day)
    await world.write(engine)
    await tab.sign_in(key)
    links = tab.page.locator(".session-link")
    await expect(links).to_have_count(20)
    await expect(links.first).to_have_text("session of day 20")
    await expect(links.last).to_have_text("session of day 01")
    await tab.page.get_by_role("link", name="Older sessions").click()
    await expect(links).to_have_count(1)
    await expect(links.first).to_have_text("session of day 00")
    await expect(tab.page.get_by_role("link", name="Older sessions")).to_have_count(0)
    await tab.page.get_by_role("link", name="Newest sessions").click()
    await expect(links).to_have_count(20)


async def test_the_session_page_shows_its_header_and_replay(engine: AsyncEngine, tab: Tab) -> None:
    c = await corpus(engine)
    await tab.sign_in(c.key)
    await tab.page.get_by_role("link", name="Refund for a cancelled flight").click()
    page = tab.page
    assert page.url == f"{tab.base}{CONSOLE}?sessionId={c.viewed}"
    await expect(page.get_by_role("heading", level=1)).to_have_text("Refund for a cancelled flight")
    await expect(page.locator(".facts")).to_contain_text("completed")
    await expect(page.locator(".facts")).to_contain_text("Last activity")

    entries = page.locator(".entry")
    await expect(entries).to_have_count(4)
    await expect(entries.locator(".entry-label")).to_have_text(
        ["User", "Tool call", "Tool result", "Assistant"]
    )
    await expect(page.locator(f"#activity-{c.tool_call}")).to_have_class(re.compile(r"\bis-tool\b"))
    await expect(entries.nth(0)).to_have_class(re.compile(r"\brole-user\b"))

    folded = entries.nth(2).locator("details")
    await expect(folded).not_to_have_attribute("open", "")
    await expect(folded.locator(".content")).to_be_hidden()
    await folded.locator("summary").click()
    await expect(folded.locator(".content")).to_contain_text('"HAT079"')


async def test_an_unknown_session_says_so(engine: AsyncEngine, tab: Tab) -> None:
    c = await corpus(engine)
    await tab.sign_in(c.key, f"{CONSOLE}?sessionId=00000000-0000-4000-8000-000000000000")
    await expect(tab.page.get_by_role("heading", level=1)).to_have_text("Session not found")


# The panel


async def test_a_page_that_fails_to_load_offers_a_retry(engine: AsyncEngine, tab: Tab) -> None:
    c = await corpus(engine)
    await tab.sign_in(c.key)
    failed: list[str] = []

    async def fail_once(route: Route) -> None:
        if not failed:
            failed.append(route.request.url)
            await route.fulfill(status=503, content_type="application/json", body="{}")
            return
        await route.continue_()

    await tab.page.route("**/graphql", fail_once)
    await tab.page.reload()
    problem = tab.page.locator("#view [role=alert]")
    await expect(problem).to_contain_text("could not load this page")
    await problem.get_by_role("button", name="Retry").click()
    await expect(tab.page.get_by_role("heading", name="Sessions")).to_be_visible()


async def test_a_key_past_its_rate_is_told_when_to_retry(engine: AsyncEngine, tab: Tab) -> None:
    c = await corpus(engine)
    await tab.sign_in(c.key)
    # The app's own 429 (past 20/second, retry in 3 s), answered to the next request only.
    refused = rate_limited("key", parse("20/second"), 3).response
    failed: list[str] = []

    async def past_the_rate_once(route: Route) -> None:
        if not failed:
            failed.append(route.request.url)
            await route.fulfill(
                status=refused.status_code, headers=dict(refused.headers), body=refused.body
            )
            return
        await route.continue_()

    await tab.page.route("**/graphql", past_the_rate_once)
    await tab.page.reload()
    problem = tab.page.locator("#view [role=alert]")
    await expect(problem.locator("p")).to_have_text(
        "The console could not load this page. "
        "This API key sent too many requests; try again in 3 seconds."
    )
    await problem.get_by_role("button", name="Retry").click()
    await expect(tab.page.get_by_role("heading", name="Sessions")).to_be_visible()
