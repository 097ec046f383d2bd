"""The panel's status filter (issue #17): which failed sessions went like this one. A new filter
is one request; a filter already seen on this page, or reopening the panel, is none; the filter
is kept in the address like the panel, and the API's sentence about it is shown."""

from __future__ import annotations

import json
import re

import pytest
from playwright.async_api import Request, expect
from sqlalchemy.ext.asyncio import AsyncEngine

from tests.support.console_browser import CONSOLE, Tab, open_panel
from tests.support.console_worlds import statuses_world

pytestmark = pytest.mark.browser

FILTERED = "Only sessions of the requested status or source type were compared."


def operation(tab: Tab, request: Request) -> str:
    return tab.document(request).split("(")[0].split()[-1]


def status_asked(request: Request) -> object:
    return json.loads(request.post_data or "{}")["variables"].get("status")


async def apply(tab: Tab, *, option: str | None = None, label: str | None = None) -> None:
    select = tab.page.get_by_label("Neighbours' status")
    if option is not None:
        await select.select_option(option)
    else:
        await select.select_option(label=label)
    await tab.page.get_by_role("button", name="Apply").click()


async def test_a_status_filter_is_one_request_kept_in_the_address(
    engine: AsyncEngine, tab: Tab
) -> None:
    w = await statuses_world(engine)
    await tab.sign_in(w.key, f"{CONSOLE}?sessionId={w.viewed}")
    await open_panel(tab)
    titles = tab.page.locator(".neighbour-title")
    await expect(titles).to_have_count(5)
    await expect(tab.page.locator("#similar-body .degraded")).to_have_count(0)
    before = len(tab.graphql)

    await apply(tab, option="failed")
    await expect(titles).to_have_text(w.titles["failed"])
    [filtered] = tab.graphql[before:]
    assert operation(tab, filtered) == "ConsoleSimilarSessions"
    assert status_asked(filtered) == ["failed"]
    assert "timeline(" in tab.document(filtered), "the timeline comes in the same request"
    assert tab.page.url.endswith(f"?sessionId={w.viewed}&similar=open&similarStatus=failed")
    await expect(tab.page.locator("#similar-body .degraded")).to_have_text(FILTERED)
    await expect(tab.page.locator(".neighbour .status")).to_have_text(["failed"] * 2)
    await expect(tab.page.get_by_role("button", name="Apply")).to_be_focused()
    await expect(tab.page.locator("#similar-body + [role=status]")).to_have_text(
        "2 similar sessions with status “failed” shown."
    )

    # The same filter again, or closing and reopening the panel: nothing asked.
    await tab.page.get_by_role("button", name="Apply").click()
    toggle = tab.page.get_by_role("button", name="Similar sessions")
    await toggle.click()
    await toggle.click()
    await expect(titles).to_have_text(w.titles["failed"])
    assert len(tab.graphql) == before + 1

    # Back to any status: that answer is already on the page.
    await apply(tab, option="")
    await expect(titles).to_have_count(5)
    assert len(tab.graphql) == before + 1
    assert tab.page.url.endswith(f"?sessionId={w.viewed}&similar=open")

    # A status the page has not shown yet is typed.
    await apply(tab, label="Another status…")
    other = tab.page.get_by_label("Status", exact=True)
    await other.fill("timeout")
    await other.press("Enter")
    await expect(titles).to_have_text(w.titles["timeout"])
    assert len(tab.graphql) == before + 2 and status_asked(tab.graphql[-1]) == ["timeout"]
    assert tab.page.url.endswith("&similarStatus=timeout")
    # Now the statuses seen on this page are offered, the one applied selected.
    options = tab.page.locator("#similar-status option")
    await expect(options).to_have_text(
        ["Any status", "completed", "failed", "timeout", "Another status…"]
    )
    await expect(tab.page.get_by_label("Neighbours' status")).to_have_value("timeout")


async def test_landing_with_a_filter_in_the_address_is_still_one_request(
    engine: AsyncEngine, tab: Tab
) -> None:
    w = await statuses_world(engine)
    await tab.sign_in(w.key)
    before = len(tab.graphql)
    await tab.open(f"{CONSOLE}?sessionId={w.viewed}&similar=open&similarStatus=failed")
    await expect(tab.page.locator(".neighbour-title")).to_have_text(w.titles["failed"])
    [landing] = tab.graphql[before:]
    assert operation(tab, landing) == "ConsoleSessionWithSimilar"
    assert status_asked(landing) == ["failed"]
    assert "replayPage(" in tab.document(landing) and "timeline(" in tab.document(landing)
    await expect(tab.page.get_by_label("Neighbours' status")).to_have_value("failed")
    await expect(tab.page.locator("#similar-body .degraded")).to_have_text(FILTERED)

    # Collapsed, the filter waits in the address for the panel to open.
    before = len(tab.graphql)
    await tab.open(f"{CONSOLE}?sessionId={w.viewed}&similarStatus=completed")
    await expect(tab.page.get_by_role("heading", level=1)).to_be_visible()
    await open_panel(tab)
    await expect(tab.page.locator(".neighbour-title")).to_have_text(w.titles["completed"])
    [_, opened] = tab.graphql[before:]
    assert operation(tab, opened) == "ConsoleSimilarSessions"
    assert status_asked(opened) == ["completed"]


async def test_a_filter_nothing_matches_says_so(engine: AsyncEngine, tab: Tab) -> None:
    w = await statuses_world(engine)
    await tab.sign_in(w.key, f"{CONSOLE}?sessionId={w.viewed}&similar=open")
    await expect(tab.page.locator(".neighbour")).to_have_count(5)
    await apply(tab, label="Another status…")
    await tab.page.get_by_label("Status", exact=True).fill("cancelled")
    await tab.page.get_by_role("button", name="Apply").click()
    await expect(tab.page.locator(".neighbour")).to_have_count(0)
    await expect(tab.page.locator("#similar-body .empty").last).to_contain_text(
        re.compile("status “cancelled”")
    )
    await expect(tab.page.locator("#similar-body .degraded").first).to_contain_text(FILTERED)

    # An empty typed status asks nothing: the browser asks for a value.
    before = len(tab.graphql)
    await apply(tab, label="Another status…")
    await tab.page.get_by_label("Status", exact=True).fill("   ")
    await tab.page.get_by_role("button", name="Apply").click()
    assert len(tab.graphql) == before
