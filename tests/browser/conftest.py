"""Fixtures of the browser tests: the app served by uvicorn on the test database, Debian's
Chromium, and a tab on the served console. Here, not in the root conftest, so that the other
tests run without playwright."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
from playwright.async_api import Browser, async_playwright

from tests.support.console_browser import Tab, new_tab
from tests.support.console_server import CHROMIUM, CHROMIUM_ARGS, serving


@pytest.fixture
async def base_url(database_url: str) -> AsyncIterator[str]:
    with serving(database_url) as base:
        yield base


@pytest.fixture
async def browser() -> AsyncIterator[Browser]:
    """Debian's Chromium; a browser that cannot start fails the test, it never skips it."""
    async with async_playwright() as playwright:
        chromium = await playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        yield chromium
        await chromium.close()


@pytest.fixture
async def tab(browser: Browser, base_url: str) -> AsyncIterator[Tab]:
    tab = await new_tab(browser, base_url)
    yield tab
    assert tab.problems == [], "script errors or CSP violations in the page"
