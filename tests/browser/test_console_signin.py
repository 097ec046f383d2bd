"""The console's sign-in in Chromium: the key kept for the tab, refused keys, sign-out."""

from __future__ import annotations

import re

import pytest
from playwright.async_api import Browser, async_playwright, expect
from sqlalchemy.ext.asyncio import AsyncEngine

from tests.support.console_browser import (
    CONSOLE,
    Tab,
    corpus,
    new_tab,
)
from tests.support.console_server import CHROMIUM, CHROMIUM_ARGS
from tests.support.world import World

pytestmark = pytest.mark.browser


async def test_debians_chromium_launches() -> None:
    """Run in the test body, not a fixture: no browser is a failure, never a skip."""
    async with async_playwright() as playwright:
        chromium = await playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        assert chromium.version.split(".")[0].isdigit()
        await chromium.close()


# Signing in


async def test_sign_in_keeps_the_key_for_the_tab_and_sign_out_clears_it(
    engine: AsyncEngine, tab: Tab, browser: Browser
) -> None:
    world = corpus(engine)
    key = (await world).key
    page = tab.page
    await tab.open(CONSOLE)
    await expect(page.get_by_role("heading", name="Sign in")).to_be_visible()
    await expect(page.get_by_label("API key")).to_be_focused()

    await page.get_by_label("API key").fill("sk-test-not-a-key-at-all")
    await page.keyboard.press("Enter")
    await expect(page.locator("#sign-in-error")).to_have_text(re.compile("was not accepted"))
    await expect(page.get_by_label("API key")).to_have_attribute("aria-invalid", "true")
    assert await tab.stored_key() is None

    await page.get_by_label("API key").fill(key)
    await page.keyboard.press("Enter")
    await expect(page.get_by_role("heading", name="Sessions")).to_be_visible()
    await expect(page.locator("#account-name")).to_have_text("acme")
    assert await tab.stored_key() == key

    await page.reload()
    await expect(page.get_by_role("heading", name="Sessions")).to_be_visible()
    await expect(page.locator("#sign-in")).to_be_hidden()

    other = await new_tab(browser, tab.base)
    await other.open(CONSOLE)
    await expect(other.page.get_by_role("heading", name="Sign in")).to_be_visible()

    await page.get_by_role("button", name="Sign out").click()
    await expect(page.get_by_role("heading", name="Sign in")).to_be_visible()
    await expect(page.locator("#sign-in-error")).to_have_text("You are signed out.")
    for link in ("Failure modes", "Alerts"):  # the account's pages go with its key
        await expect(page.locator(".topnav-link", has_text=link)).to_be_hidden()
    assert await tab.stored_key() is None
    await page.reload()
    await expect(page.get_by_role("heading", name="Sign in")).to_be_visible()

    assert not any(key in url for url in tab.urls), "the key travelled in a URL"
    assert all(
        r.headers["authorization"] in (f"Bearer {key}", "Bearer sk-test-not-a-key-at-all")
        for r in tab.graphql
    )


async def test_a_stored_key_that_stops_working_asks_to_sign_in_again(
    engine: AsyncEngine, tab: Tab
) -> None:
    c = await corpus(engine)
    await tab.sign_in(c.key)
    await tab.page.evaluate(
        "() => window.sessionStorage.setItem('similar-sessions.api-key', 'sk-test-revoked-key')"
    )
    await tab.page.reload()
    await expect(tab.page.locator("#sign-in-error")).to_have_text(re.compile("no longer accepted"))
    assert await tab.stored_key() is None


async def test_a_key_without_the_scope_is_told_so(engine: AsyncEngine, tab: Tab) -> None:
    world = World()
    _, key = world.account(scopes=())
    await world.write(engine)
    await tab.open(CONSOLE)
    await tab.page.get_by_label("API key").fill(key)
    await tab.page.keyboard.press("Enter")
    await expect(tab.page.locator("#sign-in-error")).to_have_text(re.compile("lacks"))
    assert await tab.stored_key() is None


# The list and the session page
