"""A running session in Chromium: its badge in the list and on its page, its replay and its
neighbours keeping up with the spans an agent sends (POST /v1/traces) while the page is open,
without moving the reader, and the page settling once the agent's root span ends it."""

from __future__ import annotations

import asyncio
import re
import uuid

import httpx
import pytest
from playwright.async_api import Browser, expect
from sqlalchemy.ext.asyncio import AsyncEngine

from indexer.embedders import Registry
from indexer.worker import index_once
from tests.support.console_browser import CONSOLE, Tab, new_tab
from tests.support.indexing import CONFIG, WORDS, WORDS_ONLY
from tests.support.otlp import Agent, making_sessions, post
from tests.support.world import World
from transfer.formats.spans import session_id

pytestmark = pytest.mark.browser

BOTH = ("view_runtime_sessions", "ingest_runtime_sessions")
LIVE_QUERY = "ConsoleLiveSession"
# The console asks every 3 s: a change shows within two polls, bounded here with room to spare.
SHOWN_WITHIN_MS = 15_000
FAILURE = "The payment gateway answered 502 while charging the card for order"


def said(topic: str, turn: int) -> str:
    """A turn long enough that a dozen of them make the replay scroll."""
    return f"{topic} {turn}: " + " ".join(f"{topic.lower()}{turn}w{j}" for j in range(60))


def live_polls(tab: Tab) -> int:
    return sum(LIVE_QUERY in tab.document(r) for r in tab.graphql)


async def seen_as(tab: Tab, state: str) -> None:
    """The tab hidden or shown, as the page sees it (a headless tab is always visible)."""
    await tab.page.evaluate(
        """(state) => {
            Object.defineProperty(document, 'visibilityState', {value: state, configurable: true});
            document.dispatchEvent(new Event('visibilitychange'));
        }""",
        state,
    )


@pytest.mark.parametrize(
    ("width", "height", "anchoring"),
    # Wide, the panel is a column beside the replay; on a phone it is above it, so its
    # neighbours arriving push the replay down: Chromium's scroll anchoring keeps the reader's
    # place, and without it (as in a browser that has none) the console keeps it itself.
    [(1280, 900, True), (390, 844, True), (390, 844, False)],
    ids=["laptop", "phone", "phone-without-scroll-anchoring"],
)
async def test_a_running_session_keeps_up_without_moving_the_reader(
    engine: AsyncEngine,
    browser: Browser,
    base_url: str,
    width: int,
    height: int,
    anchoring: bool,
) -> None:
    tab = await new_tab(browser, base_url, width, height)
    world = World()
    account, key = world.account("live", scopes=BOTH, model=str(WORDS))
    await world.write(engine)
    sid = str(session_id(uuid.UUID(account), "conv-live"))
    agent = Agent("conv-live")
    agent.user("My order will not go through.")
    agent.chat("Let me look at the order.")
    for turn in range(10):
        agent.user(said("Question", turn))
        agent.chat(said("Answer", turn))
    # Another session of the account, ended, that the running one will come to resemble.
    other = Agent("conv-other")
    other.user(f"{FAILURE} 7731.")
    other.chat("The gateway failed; I retried and the charge went through.")
    other.finish()
    # the server in the test runs no indexer: the hook makes what it acknowledges into sessions
    async with httpx.AsyncClient(base_url=base_url, event_hooks=making_sessions(engine)) as client:
        for spans in (agent.spans, other.spans):
            assert (await post(client, key, spans)).status_code == 200

        # The list shows the running session's badge, with its tooltip; the ended one has none.
        await tab.sign_in(key)
        running = tab.page.locator(".session-item", has_text="My order will not go through.")
        badge = running.locator(".status")
        await expect(badge).to_have_class(re.compile(r"\bis-live\b"))
        await expect(badge).to_have_text("running (still receiving activity)")
        await expect(badge).to_have_attribute("title", re.compile("^Running: "))
        await expect(badge.locator(".live-dot")).to_be_visible()
        ended = tab.page.locator(".session-item", has_text=FAILURE).locator(".status")
        await expect(ended).to_have_text("completed")

        # Its page, the panel open: nothing is embedded yet.
        await tab.open(f"{CONSOLE}?sessionId={sid}&similar=open")
        status = tab.page.locator(".fact-status .status")
        await expect(status).to_have_class(re.compile(r"\bis-live\b"))
        await expect(tab.page.locator(".live-note")).to_have_text(re.compile("^Live: "))
        entries = tab.page.locator(".entry")
        await expect(entries).to_have_count(22)
        if not anchoring:  # set through the CSSOM, which the page's CSP allows
            await tab.page.evaluate(
                "() => { document.documentElement.style.overflowAnchor = 'none'; }"
            )
        await expect(tab.page.locator("#similar-body")).to_contain_text("Nothing to compare yet")
        assert await tab.axe_violations() == []

        # The reader scrolls into the replay and reads a turn in the middle.
        reading = entries.nth(8)
        await reading.evaluate("(el) => el.scrollIntoView({block: 'start'})")
        await tab.page.wait_for_timeout(400)  # the scroll position is kept after 250 ms
        top = await reading.evaluate("(el) => el.getBoundingClientRect().top")
        assert await tab.page.evaluate("() => window.scrollY") > 0
        # The turns shown are kept as they are: the same elements, never drawn again.
        await tab.page.evaluate("() => { window.shownFirst = document.querySelector('.entry'); }")

        async def in_place() -> None:
            """The turn read is where it was on the screen (to the pixel the scroll position
            snaps to), and the first turn is the same element."""
            now = await reading.evaluate("(el) => el.getBoundingClientRect().top")
            assert abs(now - top) < 1, (now, top)
            assert await tab.page.evaluate(
                "() => window.shownFirst.isConnected"
                " && window.shownFirst === document.querySelector('.entry')"
            )

        # The agent goes on: two more exchanges, the second like the other session; the
        # indexer takes them (in this process, as `serve`'s own indexer would).
        agent.user(said("Question", 10))
        agent.chat(said("Answer", 10))
        agent.user(f"{FAILURE} 7731.")
        agent.chat("The gateway failed; I will retry the charge.")
        assert (await post(client, key, agent.spans[-2:])).status_code == 200
        await index_once(engine, Registry(WORDS_ONLY), CONFIG)

        await expect(entries).to_have_count(26, timeout=SHOWN_WITHIN_MS)
        await expect(entries.last).to_contain_text("I will retry the charge.")
        await in_place()
        await expect(tab.page.locator(".replay .count")).to_have_text("26 steps")
        # The new turns are below the view: a button offers them instead of a jump.
        jump = tab.page.get_by_role("button", name="↓ 4 new steps")
        await expect(jump).to_be_visible()
        await in_place()

        # The neighbours were asked again in place: the other session came close.
        neighbour = tab.page.locator(".neighbour-title", has_text=FAILURE)
        await expect(neighbour).to_be_attached(timeout=SHOWN_WITHIN_MS)
        await in_place()

        await jump.click()
        await expect(entries.nth(22)).to_be_focused()
        await expect(entries.nth(22)).to_be_in_viewport()
        await expect(jump).to_be_hidden()

        # A hidden tab asks nothing; shown again, it asks at once.
        await seen_as(tab, "hidden")
        polls = live_polls(tab)
        await tab.page.wait_for_timeout(4_000)
        assert live_polls(tab) == polls
        async with tab.page.expect_request(lambda r: r.url.endswith("/graphql")):
            await seen_as(tab, "visible")
        assert live_polls(tab) == polls + 1

        # The agent's root span ends the conversation: the page says so once and stops asking.
        agent.finish()
        assert (await post(client, key, agent.spans[-1:])).status_code == 200
    await expect(status).to_have_text("completed", timeout=SHOWN_WITHIN_MS)
    await expect(tab.page.locator(".is-live")).to_have_count(0)
    await expect(tab.page.locator(".live-note")).to_have_text("This session has completed.")
    polls = live_polls(tab)
    await asyncio.sleep(4)
    assert live_polls(tab) == polls
    await expect(entries).to_have_count(26)
    assert await tab.axe_violations() == []
    assert tab.problems == [], "script errors or CSP violations in the page"
