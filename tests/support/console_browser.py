"""What the browser tests share: a tab that records its requests and page errors, and a small
corpus (their fixtures are in tests/browser/conftest.py)."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from playwright.async_api import Browser, ConsoleMessage, Page, Request, expect
from sqlalchemy.ext.asyncio import AsyncEngine

from tests.support.world import World, blend, direction

CONSOLE = "/console/runtime-sessions"
SIMILAR_QUERY = "ConsoleSimilarSessions"
AXE = Path(__file__).resolve().parents[1] / "browser" / "vendor" / "axe.min.js"
# Elements no content may become, and the only link schemes content may keep.
FORBIDDEN = "img, script, iframe, svg, object, embed, style, link, meta, form, textarea"
SAFE_HREF = ("http:", "https:", "mailto:")
LONG_TOOL_RESULT = json.dumps(
    {"reservation_id": "ZFA04Y", "flights": [{"flight_number": f"HAT{i:03}"} for i in range(80)]},
    indent=2,
)


@dataclass
class Tab:
    """A browser tab on the served console, with what it asked and what went wrong in it."""

    page: Page
    base: str
    graphql: list[Request] = field(default_factory=list)
    urls: list[str] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)

    def similar_requests(self) -> list[Request]:
        """Requests that ask for neighbours (alone, or with the session page)."""
        return [r for r in self.graphql if "similarSessions(" in self.document(r)]

    @staticmethod
    def document(request: Request) -> str:
        body = json.loads(request.post_data or "{}")
        return str(body.get("query", ""))

    async def axe_violations(self, impacts: tuple[str, ...] = ("serious", "critical")) -> Any:
        """axe-core's violations of the given impacts on the page as it is now."""
        if not await self.page.evaluate("() => typeof window.axe === 'object'"):
            # Evaluated through the debugging protocol: the page's CSP stays as served.
            await self.page.evaluate(AXE.read_text(encoding="utf-8"))
        found = await self.page.evaluate(
            """async () => (await window.axe.run(document, {resultTypes: ['violations']}))
                .violations.map(v => ({id: v.id, impact: v.impact, help: v.help,
                  nodes: v.nodes.map(n => n.target.join(' ')).slice(0, 5)}))"""
        )
        return [v for v in found if v["impact"] in impacts]

    async def open(self, path: str) -> None:
        await self.page.goto(self.base + path)

    async def sign_in(self, key: str, path: str = CONSOLE) -> None:
        await self.open(path)
        await self.page.get_by_label("API key").fill(key)
        await self.page.get_by_role("button", name="Sign in").click()
        await expect(self.page.locator("#account")).to_be_visible()

    async def stored_key(self) -> str | None:
        value = await self.page.evaluate(
            "() => window.sessionStorage.getItem('similar-sessions.api-key')"
        )
        assert value is None or isinstance(value, str)
        return value


async def assert_nothing_ran(tab: Tab) -> None:
    """No stored payload ran or became an element, a handler or an unsafe link in the view."""
    assert await tab.page.evaluate("() => window.__pwned") is None
    # The one form is the console's own: the panel's status filter.
    assert await tab.page.locator(f"#view :is({FORBIDDEN}):not(#similar-filter)").count() == 0
    handlers = await tab.page.evaluate(
        """() => [...document.querySelectorAll('#view *')].flatMap(
            (el) => [...el.attributes].map((a) => a.name)).filter((n) => n.startsWith('on'))"""
    )
    assert handlers == []
    hrefs = await tab.page.evaluate(
        "() => [...document.querySelectorAll('#view a[href]')].map((a) => a.href)"
    )
    assert hrefs and all(h.startswith((*SAFE_HREF, tab.base)) for h in hrefs), hrefs
    assert tab.problems == [], "a blocked script or style would show here"


async def new_tab(browser: Browser, base: str, width: int = 1280, height: int = 900) -> Tab:
    context = await browser.new_context(viewport={"width": width, "height": height})
    tab = Tab(await context.new_page(), base)

    def on_request(request: Request) -> None:
        tab.urls.append(request.url)
        if request.url.endswith("/graphql"):
            tab.graphql.append(request)

    def on_console(message: ConsoleMessage) -> None:
        if "Content Security Policy" in message.text or message.type == "warning":
            tab.problems.append(message.text)

    tab.page.on("request", on_request)
    tab.page.on("console", on_console)
    tab.page.on("pageerror", lambda error: tab.problems.append(str(error)))
    return tab


@dataclass
class Corpus:
    key: str
    viewed: str
    close: str
    related: str
    loose: str
    tool_call: str
    probe_activity: str
    close_turn: str


async def corpus(
    engine: AsyncEngine, *, features: tuple[str, ...] = ("similarSessions",)
) -> Corpus:
    """A viewed session with a replay, and three neighbours: close, related and loose."""
    world = World()
    account, key = world.account(features=features)
    topic = direction(1)
    viewed = world.session(account, "Refund for a cancelled flight", day=10)
    asked = world.activity(viewed, 0, "My flight HAT136 was cancelled. I want a refund.")
    tool_call = world.activity(
        viewed,
        1,
        '{"name": "get_reservation_details", "arguments": {"reservation_id": "ZFA04Y"}}',
        role="assistant",
        kind="tool_call",
    )
    world.activity(viewed, 2, LONG_TOOL_RESULT, role="tool", kind="tool_result")
    world.activity(viewed, 3, "The refund is on its way to your card.", role="assistant")
    world.chunk(
        viewed,
        blend(topic, direction(2), 0.0),
        index=0,
        source_id=asked,
        content="My flight HAT136 was cancelled. I want a refund.",
    )
    close = world.session(account, "Cancelled flight, refund to card", day=9)
    world.activity(close, 0, "Hello, I need help with a booking.")
    close_turn = world.activity(close, 1, "Cancelled flight; refund to card.")
    world.activity(close, 2, "Done: the refund is on its way.", role="assistant")
    world.chunk(
        close,
        blend(topic, direction(3), 0.1),
        source_id=close_turn,
        content="Cancelled flight; refund to card.",
    )
    related = world.session(account, "Change of cabin after a delay", day=8)
    world.chunk(related, blend(topic, direction(4), 0.55), content="A delay, then a cabin change.")
    loose = world.session(account, "Baggage allowance question", day=7)
    world.chunk(loose, blend(topic, direction(5), 0.68), content="How many bags may I check?")
    await world.write(engine)
    return Corpus(key, viewed, close, related, loose, tool_call, asked, close_turn)


async def open_panel(tab: Tab) -> None:
    await tab.page.get_by_role("button", name="Similar sessions").click()
    await expect(tab.page.locator("#similar-body")).to_have_attribute("aria-busy", "false")
