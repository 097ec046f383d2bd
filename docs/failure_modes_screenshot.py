"""Take docs/console-failure-modes.png and docs/console-failure-group.png: the Failure modes
page over the last 7 days, and the first card's representative opened, at 1280x800.

    DATABASE_URL=... python docs/failure_modes_screenshot.py

Recreates database fm_console with the console tests' failures world (three kinds of failure
told in words, one also a month ago; tests/support/failures.py), serves the app on a free
port and drives Debian's Chromium at /usr/bin/chromium (the dev extra)."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

from playwright.sync_api import Page, expect, sync_playwright

from bench.common.databases import recreate
from config.settings import Settings
from data.engine import make_engine
from data.migrate import migrate
from data.server import resolve_url
from tests.support.console_server import CHROMIUM, CHROMIUM_ARGS, serving
from tests.support.failures import lexical_failures

OUT = Path(__file__).resolve().parent
CONSOLE = "/console/runtime-sessions"


async def load() -> tuple[str, str]:
    """The failures world in a fresh fm_console; its URL and the account's key."""
    settings = Settings.from_env()
    url = await recreate(resolve_url(settings.database_url, settings.data_dir), "fm_console")
    engine = make_engine(url)
    try:
        await migrate(engine)
        key, _ = await lexical_failures(engine)
    finally:
        await engine.dispose()
    return url, key


def failure_modes(page: Page, base: str, key: str) -> None:
    page.goto(base + CONSOLE)
    page.get_by_label("API key").fill(key)
    page.get_by_role("button", name="Sign in").click()
    expect(page.get_by_role("heading", name="Sessions")).to_be_visible()
    page.goto(f"{base}{CONSOLE}?failureModes=7")
    expect(page.locator(".failure-card").first).to_be_visible()


def main() -> int:
    url, key = asyncio.run(load())
    with serving(url) as base, sync_playwright() as playwright:
        browser = playwright.chromium.launch(
            executable_path=CHROMIUM, args=[*CHROMIUM_ARGS, "--hide-scrollbars"]
        )
        for name, opened in (
            ("console-failure-modes.png", False),
            ("console-failure-group.png", True),
        ):
            page = browser.new_page(viewport={"width": 1280, "height": 800})
            failure_modes(page, base, key)
            if opened:
                page.locator(".failure-card a").first.click()
                expect(page.locator(".failure-group .member").first).to_be_visible()
                expect(page.locator(".match-terms").first).to_be_visible()
            page.evaluate("() => document.activeElement?.blur()")
            page.screenshot(path=str(OUT / name))
            print(f"wrote {OUT / name}", file=sys.stderr)
            page.close()
        browser.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
