"""The search box: a session id jumps to the session, text searches titles and source ids, and
the keyboard reaches it."""

from __future__ import annotations

import pytest
from playwright.async_api import expect
from sqlalchemy.ext.asyncio import AsyncEngine

from tests.support.console_browser import CONSOLE, Tab, corpus

pytestmark = pytest.mark.browser


async def test_a_session_id_jumps_to_the_session(engine: AsyncEngine, tab: Tab) -> None:
    c = await corpus(engine)
    await tab.sign_in(c.key)
    await tab.page.keyboard.press("/")  # the shortcut reaches the box from anywhere
    search = tab.page.get_by_role(
        "searchbox", name="Search sessions by title, source id or session id"
    )
    await expect(search).to_be_focused()
    await tab.page.keyboard.type(f"  {c.close.upper()} ")
    await tab.page.keyboard.press("Enter")
    await expect(tab.page.get_by_role("heading", level=1)).to_have_text(
        "Cancelled flight, refund to card"
    )
    assert tab.page.url == f"{tab.base}{CONSOLE}?sessionId={c.close}"


async def test_text_finds_titles_and_source_ids_and_the_tab_key_reaches_the_box(
    engine: AsyncEngine, tab: Tab
) -> None:
    c = await corpus(engine)
    await tab.sign_in(c.key, f"{CONSOLE}?sessionId={c.viewed}")
    search = tab.page.get_by_role("searchbox")
    await tab.page.locator(".skip-link").focus()  # the first stop of the Tab key
    await tab.page.keyboard.press("Tab")
    await expect(tab.page.get_by_role("link", name="Runtime sessions")).to_be_focused()
    await tab.page.keyboard.press("Tab")
    await expect(tab.page.get_by_role("link", name="Failure modes")).to_be_focused()
    await tab.page.keyboard.press("Tab")
    await expect(tab.page.get_by_role("link", name="Alerts")).to_be_focused()
    await tab.page.keyboard.press("Tab")
    await expect(search).to_be_focused()
    await tab.page.keyboard.type("REFUND")
    await tab.page.keyboard.press("Enter")
    await expect(tab.page.get_by_role("heading", level=1)).to_have_text(
        "Sessions matching “REFUND”"
    )
    await expect(tab.page.locator(".session-link")).to_have_text(
        ["Refund for a cancelled flight", "Cancelled flight, refund to card"]
    )
    await expect(search).to_have_value("REFUND")
    assert tab.page.url == f"{tab.base}{CONSOLE}?q=REFUND"

    source_id = await tab.page.locator(".session-item code").first.inner_text()
    await search.fill(source_id)
    await search.press("Enter")
    await expect(tab.page.locator(".session-link")).to_have_text(["Refund for a cancelled flight"])

    await search.fill("100%_of")
    await search.press("Enter")
    await expect(tab.page.locator(".titles .empty")).to_have_text(
        "No session's title or source id contains this text."
    )
    await tab.page.get_by_role("link", name="Show all sessions").click()
    await expect(tab.page.locator(".session-link")).to_have_count(4)
