"""Take docs/console-laptop.png and docs/console-phone.png: a session with the "Similar
sessions" panel open, at 1280x800 and at 390 px wide.

    python docs/screenshot.py http://127.0.0.1:8000 sk-demo-... [--session ID] [-o docs]

The key is read from the command line (or SIMILAR_SESSIONS_API_KEY) and typed into the sign-in
form, as an operator would. Without --session it picks the first session on the list that
has similar sessions. Needs Debian's Chromium at /usr/bin/chromium and the dev extra.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from playwright.sync_api import Browser, Page, expect, sync_playwright

CHROMIUM = "/usr/bin/chromium"
ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-dev-shm-usage",
    "--disable-background-networking",
    "--disable-component-update",
    "--no-first-run",
    "--hide-scrollbars",
]
CONSOLE = "/console/runtime-sessions"
# (file, viewport width, viewport height, height of the picture): the laptop picture is the
# first screen; the phone picture runs on past its first screen to show the open panel.
SHOTS = [("console-laptop.png", 1280, 800, 800), ("console-phone.png", 390, 844, 1500)]


def sign_in(page: Page, base: str, key: str) -> None:
    page.goto(base + CONSOLE)
    page.get_by_label("API key").fill(key)
    page.get_by_role("button", name="Sign in").click()
    expect(page.get_by_role("heading", name="Sessions")).to_be_visible()


def open_panel(page: Page) -> int:
    toggle = page.get_by_role("button", name="Similar sessions", exact=True)
    if toggle.get_attribute("aria-expanded") != "true":
        toggle.click()
    expect(page.locator("#similar-body")).to_have_attribute("aria-busy", "false")
    return page.locator(".neighbour").count()


def first_with_neighbours(page: Page, base: str) -> str | None:
    links = page.locator(".session-link")
    for href in [str(links.nth(i).get_attribute("href")) for i in range(links.count())]:
        page.goto(base + href)
        expect(page.get_by_role("heading", level=1)).to_be_visible()
        if open_panel(page) > 0:
            return href
    return None


def shoot(browser: Browser, base: str, key: str, href: str, out: Path) -> None:
    for name, width, height, picture in SHOTS:
        page = browser.new_page(viewport={"width": width, "height": height})
        sign_in(page, base, key)
        page.goto(base + href)
        expect(page.get_by_role("heading", level=1)).to_be_visible()
        open_panel(page)
        page.evaluate("() => window.scrollTo(0, 0)")
        page.evaluate("() => document.activeElement?.blur()")
        page.screenshot(
            path=str(out / name),
            full_page=True,
            clip={"x": 0, "y": 0, "width": width, "height": picture},
        )
        page.close()
        print(f"wrote {out / name}", file=sys.stderr)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("base_url")
    parser.add_argument("api_key", nargs="?", default=os.environ.get("SIMILAR_SESSIONS_API_KEY"))
    parser.add_argument(
        "--session", help="the session to show (default: the first with neighbours)"
    )
    parser.add_argument("-o", "--output", default=str(Path(__file__).parent), help="a directory")
    args = parser.parse_args()
    if not args.api_key:
        parser.error("an API key is required (argument or SIMILAR_SESSIONS_API_KEY)")
    base = args.base_url.rstrip("/")

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        page = browser.new_page()
        sign_in(page, base, args.api_key)
        href = f"{CONSOLE}?sessionId={args.session}" if args.session else None
        href = href or first_with_neighbours(page, base)
        page.close()
        if href is None:
            print("no session on the first page has similar sessions", file=sys.stderr)
            browser.close()
            return 1
        # The panel is asked for in the address: one request brings the page and neighbours.
        shoot(browser, base, args.api_key, f"{href.split('#')[0]}&similar=open", Path(args.output))
        browser.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
