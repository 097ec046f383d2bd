"""The console as an operator uses it: the real app served by uvicorn, driven in Chromium."""

from __future__ import annotations

import json
import re
from collections.abc import AsyncIterator
from dataclasses import dataclass, field

import pytest
from playwright.async_api import (
    Browser,
    ConsoleMessage,
    Page,
    Request,
    Route,
    async_playwright,
    expect,
)
from sqlalchemy.ext.asyncio import AsyncEngine

from tests.console_server import CHROMIUM, CHROMIUM_ARGS, serving
from tests.world import World, blend, direction

pytestmark = pytest.mark.browser

CONSOLE = "/console/runtime-sessions"
SIMILAR_QUERY = "ConsoleSimilarSessions"
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
        return [r for r in self.graphql if SIMILAR_QUERY in (r.post_data or "")]

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


@pytest.fixture
async def tab(browser: Browser, base_url: str) -> AsyncIterator[Tab]:
    tab = await new_tab(browser, base_url)
    yield tab
    assert tab.problems == [], "script errors or CSP violations in the page"


@dataclass
class Corpus:
    key: str
    viewed: str
    close: str
    related: str
    loose: str
    tool_call: str
    probe_activity: str


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
    world.chunk(close, blend(topic, direction(3), 0.1), content="Cancelled flight; refund to card.")
    related = world.session(account, "Change of cabin after a delay", day=8)
    world.chunk(related, blend(topic, direction(4), 0.55), content="A delay, then a cabin change.")
    loose = world.session(account, "Baggage allowance question", day=7)
    world.chunk(loose, blend(topic, direction(5), 0.68), content="How many bags may I check?")
    await world.write(engine)
    return Corpus(key, viewed, close, related, loose, tool_call, asked)


async def open_panel(tab: Tab) -> None:
    await tab.page.get_by_role("button", name="Similar sessions").click()
    await expect(tab.page.locator("#similar-body")).to_have_attribute("aria-busy", "false")


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
    await expect(page.locator(f"#entry-{c.tool_call}")).to_have_class(re.compile(r"\bis-tool\b"))
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


async def test_the_panel_is_collapsed_by_default_and_asks_nothing(
    engine: AsyncEngine, tab: Tab
) -> None:
    c = await corpus(engine)
    await tab.sign_in(c.key, f"{CONSOLE}?sessionId={c.viewed}")
    toggle = tab.page.get_by_role("button", name="Similar sessions")
    await expect(toggle).to_have_attribute("aria-expanded", "false")
    await expect(tab.page.locator("#similar-body")).to_be_hidden()
    assert tab.similar_requests() == []


async def test_the_panel_is_absent_without_the_feature(engine: AsyncEngine, tab: Tab) -> None:
    c = await corpus(engine, features=())
    await tab.sign_in(c.key, f"{CONSOLE}?sessionId={c.viewed}")
    await expect(tab.page.locator(".entry")).to_have_count(4)
    await expect(tab.page.get_by_role("button", name="Similar sessions")).to_have_count(0)
    await expect(tab.page.get_by_text("Similar sessions")).to_have_count(0)


async def test_opening_asks_once_reopening_asks_nothing_another_session_asks_again(
    engine: AsyncEngine, tab: Tab
) -> None:
    c = await corpus(engine)
    await tab.sign_in(c.key, f"{CONSOLE}?sessionId={c.viewed}")
    before = len(tab.graphql)
    toggle = tab.page.get_by_role("button", name="Similar sessions")

    await toggle.focus()
    await tab.page.keyboard.press("Enter")  # the keyboard opens it, like a click
    await expect(toggle).to_have_attribute("aria-expanded", "true")
    await expect(tab.page.locator(".neighbour")).to_have_count(3)
    assert len(tab.graphql) - before == 1
    assert len(tab.similar_requests()) == 1

    await toggle.click()
    await expect(tab.page.locator("#similar-body")).to_be_hidden()
    await toggle.click()
    await expect(tab.page.locator(".neighbour")).to_have_count(3)
    assert len(tab.graphql) - before == 1

    await tab.page.get_by_role("link", name="Cancelled flight, refund to card").click()
    await expect(tab.page.get_by_role("heading", level=1)).to_have_text(
        "Cancelled flight, refund to card"
    )
    await open_panel(tab)
    assert len(tab.similar_requests()) == 2
    assert f'"id": "{c.close}"' in (tab.similar_requests()[-1].post_data or "").replace(
        '":"', '": "'
    )


async def test_an_entry_shows_the_band_word_the_number_in_a_tooltip_and_links_to_the_session(
    engine: AsyncEngine, tab: Tab
) -> None:
    c = await corpus(engine)
    await tab.sign_in(c.key, f"{CONSOLE}?sessionId={c.viewed}")
    await open_panel(tab)
    neighbours = tab.page.locator(".neighbour")
    await expect(neighbours.locator(".neighbour-title")).to_have_text(
        [
            "Cancelled flight, refund to card",
            "Change of cabin after a delay",
            "Baggage allowance question",
        ]
    )
    await expect(neighbours.locator(".band")).to_have_text(["close", "related", "loose"])
    await expect(neighbours.first.locator(".band")).to_have_class(re.compile(r"\bband-close\b"))
    for i in range(3):
        title = await neighbours.nth(i).locator(".band").get_attribute("title")
        assert title is not None and re.fullmatch(r"Similarity 0\.\d\d", title), title
        shown = await neighbours.nth(i).inner_text()
        assert not re.search(r"\b0\.\d", shown), "the number shows outside the tooltip"

    link = neighbours.first.get_by_role("link", name="Cancelled flight, refund to card")
    await expect(link).to_have_attribute("href", f"{CONSOLE}?sessionId={c.close}")

    # A keyboard user reaches the band and sees the tooltip's number while it has focus.
    await link.focus()
    await tab.page.keyboard.press("Tab")
    band = neighbours.first.locator(".band")
    await expect(band).to_be_focused()
    shown = await band.evaluate("(el) => getComputedStyle(el, '::after').content")
    assert shown == json.dumps(await band.get_attribute("title"))
    await expect(neighbours.first.locator("blockquote.passage")).to_have_text(
        "Cancelled flight; refund to card."
    )
    probe = neighbours.first.locator(".probe a")
    await expect(probe).to_have_attribute("href", f"#entry-{c.probe_activity}")


async def test_a_withheld_passage_says_so(engine: AsyncEngine, tab: Tab) -> None:
    c = await corpus(engine)

    async def withhold(route: Route) -> None:
        if SIMILAR_QUERY not in (route.request.post_data or ""):
            await route.continue_()
            return
        response = await route.fetch()
        body = await response.json()
        first = body["data"]["runtimeSession"]["similarSessions"]["results"][0]
        first["matches"][0]["text"] = None
        await route.fulfill(response=response, json=body)

    await tab.page.route("**/graphql", withhold)
    await tab.sign_in(c.key, f"{CONSOLE}?sessionId={c.viewed}")
    await open_panel(tab)
    first = tab.page.locator(".neighbour").first
    await expect(first.locator(".passage-withheld")).to_have_text(
        "Passage withheld: its text is not shown."
    )
    await expect(first).not_to_contain_text("Cancelled flight; refund to card.")
    await expect(
        tab.page.locator(".neighbour").nth(1).locator("blockquote.passage")
    ).to_be_visible()


async def test_degraded_sentences_show_above_the_list(engine: AsyncEngine, tab: Tab) -> None:
    c = await corpus(engine)
    world = World()
    world.chunk(c.viewed, None, index=1, content="still waiting for its vector")
    await world.write(engine)
    await tab.sign_in(c.key, f"{CONSOLE}?sessionId={c.viewed}")
    await open_panel(tab)
    note = tab.page.locator(".degraded")
    await expect(note).to_have_text(re.compile("still waiting to be embedded"))
    above = await tab.page.evaluate(
        """() => Boolean(document.querySelector('.degraded').compareDocumentPosition(
            document.querySelector('.neighbours')) & Node.DOCUMENT_POSITION_FOLLOWING)"""
    )
    assert above


@pytest.mark.parametrize(
    ("case", "sentence"),
    [
        ("not_embedded", "Nothing to compare yet: this session has not been embedded."),
        ("no_comparable", "Nothing comparable: no other session of this account is embedded"),
        ("nothing_similar", "No similar sessions: no other session of this account came close"),
    ],
)
async def test_an_empty_list_says_which_empty(
    engine: AsyncEngine, tab: Tab, case: str, sentence: str
) -> None:
    world = World()
    account, key = world.account()
    viewed = world.session(account, "the viewed session", day=2)
    if case == "not_embedded":
        world.chunk(viewed, None)
    else:
        world.chunk(viewed, blend(direction(1), direction(2), 0.0))
    if case == "nothing_similar":
        other = world.session(account, "an unrelated session", day=1)
        world.chunk(other, blend(direction(3), direction(4), 0.0))
    await world.write(engine)
    await tab.sign_in(key, f"{CONSOLE}?sessionId={viewed}")
    await open_panel(tab)
    await expect(tab.page.locator("#similar-body .empty")).to_contain_text(sentence)
    await expect(tab.page.locator(".neighbour")).to_have_count(0)


@pytest.mark.parametrize("failure", ["server_error", "network"])
async def test_an_error_shows_a_sentence_and_a_retry(
    engine: AsyncEngine, tab: Tab, failure: str
) -> None:
    c = await corpus(engine)
    failed: list[str] = []

    async def fail_once(route: Route) -> None:
        if SIMILAR_QUERY in (route.request.post_data or "") and not failed:
            failed.append(route.request.url)
            if failure == "network":
                await route.abort("connectionrefused")
            else:
                await route.fulfill(status=500, content_type="text/plain", body="boom")
            return
        await route.continue_()

    await tab.page.route("**/graphql", fail_once)
    await tab.sign_in(c.key, f"{CONSOLE}?sessionId={c.viewed}")
    await open_panel(tab)
    problem = tab.page.locator("#similar-body [role=alert]")
    await expect(problem).to_contain_text("Similar sessions could not be loaded.")
    await expect(tab.page.locator(".neighbour")).to_have_count(0)
    await problem.get_by_role("button", name="Retry").click()
    await expect(tab.page.locator(".neighbour")).to_have_count(3)
    await expect(tab.page.locator(".neighbour-title").first).to_be_focused()
    assert len(tab.similar_requests()) == 2


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


async def test_the_open_panel_fits_a_phone(
    engine: AsyncEngine, browser: Browser, base_url: str
) -> None:
    c = await corpus(engine)
    phone = await new_tab(browser, base_url, width=390, height=844)
    await phone.sign_in(c.key, f"{CONSOLE}?sessionId={c.viewed}")
    await open_panel(phone)
    await expect(phone.page.locator(".neighbour")).to_have_count(3)
    width = await phone.page.evaluate("() => document.documentElement.scrollWidth")
    assert width <= 390
    assert phone.problems == []
