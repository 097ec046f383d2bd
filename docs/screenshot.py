"""Take docs/console.png: a session's replay with the "Similar sessions" panel open.

    python docs/screenshot.py http://127.0.0.1:8000 sk-demo-... [--session ID] [-o docs/console.png]

The key is read from the command line (or SIMILAR_SESSIONS_API_KEY) and typed into the sign-in
form, as an operator would. Without --session it picks the first session on the list that
has similar sessions. Needs Debian's Chromium at /usr/bin/chromium and the dev extra.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from playwright.sync_api import Page, expect, sync_playwright

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
LEAD_PX = 260  # how much of the replay shows above the panel


def sign_in(page: Page, base: str, key: str) -> None:
    page.goto(base + CONSOLE)
    page.get_by_label("API key").fill(key)
    page.get_by_role("button", name="Sign in").click()
    expect(page.get_by_role("heading", name="Sessions")).to_be_visible()


def open_panel(page: Page) -> int:
    page.get_by_role("button", name="Similar sessions").click()
    expect(page.locator("#similar-body")).to_have_attribute("aria-busy", "false")
    return page.locator(".neighbour").count()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("base_url")
    parser.add_argument("api_key", nargs="?", default=os.environ.get("SIMILAR_SESSIONS_API_KEY"))
    parser.add_argument(
        "--session", help="the session to show (default: the first with neighbours)"
    )
    parser.add_argument("-o", "--output", default=str(Path(__file__).with_name("console.png")))
    parser.add_argument("--width", type=int, default=1280)
    args = parser.parse_args()
    if not args.api_key:
        parser.error("an API key is required (argument or SIMILAR_SESSIONS_API_KEY)")
    base = args.base_url.rstrip("/")

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        page = browser.new_page(viewport={"width": args.width, "height": 900})
        sign_in(page, base, args.api_key)
        if args.session:
            candidates = [f"{CONSOLE}?sessionId={args.session}"]
        else:
            links = page.locator(".session-link")
            candidates = [str(links.nth(i).get_attribute("href")) for i in range(links.count())]
        for href in candidates:
            page.goto(base + href)
            expect(page.get_by_role("heading", level=1)).to_be_visible()
            if open_panel(page) > 0:
                break
        else:
            print("no session on the first page has similar sessions", file=sys.stderr)
            browser.close()
            return 1
        # The end of the replay above, the open panel below: scroll the panel near the top.
        page.set_viewport_size({"width": args.width, "height": _panel_height(page) + LEAD_PX + 24})
        page.evaluate(
            "(lead) => window.scrollTo(0, document.querySelector('.panel').offsetTop - lead)",
            LEAD_PX,
        )
        page.screenshot(path=args.output)
        browser.close()
    print(f"wrote {args.output}", file=sys.stderr)
    return 0


def _panel_height(page: Page) -> int:
    box = page.locator(".panel").bounding_box()
    assert box is not None
    return int(box["height"])


if __name__ == "__main__":
    sys.exit(main())
