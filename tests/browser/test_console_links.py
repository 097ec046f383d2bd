"""Links to a turn land on it (scrolled into view and marked, paging the replay when it is
far down), and Back returns to where the operator was, panel and all."""

from __future__ import annotations

import re

import pytest
from playwright.async_api import Browser, expect
from sqlalchemy.ext.asyncio import AsyncEngine

from tests.support.console_browser import CONSOLE, Tab, corpus, new_tab, open_panel
from tests.support.world import World

pytestmark = pytest.mark.browser


async def expect_marked(tab: Tab, activity_id: str) -> None:
    turn = tab.page.locator(f"#activity-{activity_id}")
    await expect(turn).to_have_attribute("aria-current", "true")
    await expect(turn).to_have_class(re.compile(r"\bis-target\b"))
    await expect(turn).to_be_in_viewport()
    await expect(tab.page.locator(".entry[aria-current]")).to_have_count(1)


async def test_a_neighbours_link_lands_on_the_matching_turn_marked(
    engine: AsyncEngine, tab: Tab
) -> None:
    c = await corpus(engine)
    await tab.sign_in(c.key, f"{CONSOLE}?sessionId={c.viewed}")
    await open_panel(tab)
    await tab.page.get_by_role("link", name="Cancelled flight, refund to card").click()
    await expect(tab.page.get_by_role("heading", level=1)).to_have_text(
        "Cancelled flight, refund to card"
    )
    assert tab.page.url == f"{tab.base}{CONSOLE}?sessionId={c.close}#activity-{c.close_turn}"
    await expect_marked(tab, c.close_turn)
    await expect(tab.page.locator(f"#activity-{c.close_turn}")).to_be_focused()


async def test_this_sessions_passage_link_marks_its_own_turn(
    engine: AsyncEngine, browser: Browser, base_url: str
) -> None:
    c = await corpus(engine)
    tab = await new_tab(browser, base_url, width=1280, height=500)
    await tab.sign_in(c.key, f"{CONSOLE}?sessionId={c.viewed}")
    await open_panel(tab)
    await tab.page.evaluate("() => window.scrollTo(0, document.body.scrollHeight)")
    await tab.page.locator(".neighbour").first.locator(".probe a").click()
    assert tab.page.url.endswith(f"#activity-{c.probe_activity}")
    await expect_marked(tab, c.probe_activity)
    # Another link moves the mark.
    await tab.page.evaluate(f"() => {{ window.location.hash = '#activity-{c.tool_call}'; }}")
    await expect_marked(tab, c.tool_call)
    assert tab.problems == []


async def long_replay(engine: AsyncEngine, turns: int) -> tuple[str, str, list[str]]:
    world = World()
    account, key = world.account()
    session = world.session(account, "A long session")
    ids = [world.activity(session, n, f"Step **{n}** of the long session") for n in range(turns)]
    await world.write(engine)
    return key, session, ids


async def test_a_link_to_a_turn_past_the_first_page_pages_until_it_is_shown(
    engine: AsyncEngine, tab: Tab
) -> None:
    key, session, ids = await long_replay(engine, 260)
    await tab.sign_in(key)
    before = len(tab.graphql)
    await tab.open(f"{CONSOLE}?sessionId={session}#activity-{ids[250]}")
    await expect_marked(tab, ids[250])
    await expect(tab.page.locator(f"#activity-{ids[250]}")).to_contain_text("Step 250")
    asked = tab.graphql[before:]
    assert [tab.document(r).split("(")[0].split()[-1] for r in asked] == [
        "ConsoleSession",
        "ConsoleReplay",
    ]
    await expect(tab.page.locator(".entry")).to_have_count(260)
    await expect(tab.page.locator(".replay h2")).to_have_text("Replay 260 steps")


async def test_a_long_replay_loads_more_on_request(engine: AsyncEngine, tab: Tab) -> None:
    key, session, ids = await long_replay(engine, 130)
    await tab.sign_in(key, f"{CONSOLE}?sessionId={session}")
    entries = tab.page.locator(".entry")
    await expect(entries).to_have_count(100)
    await expect(tab.page.locator(".replay h2")).to_contain_text("100 steps shown, more to load")
    more = tab.page.get_by_role("button", name="Show 100 more steps")
    await more.focus()
    await tab.page.keyboard.press("Enter")
    await expect(entries).to_have_count(130)
    await expect(tab.page.locator(f"#activity-{ids[100]}")).to_be_focused()
    await expect(more).to_have_count(0)
    await expect(tab.page.locator(".replay h2")).to_have_text("Replay 130 steps")


async def test_back_returns_to_the_open_panel_and_the_scroll_position(
    engine: AsyncEngine, browser: Browser, base_url: str
) -> None:
    c = await corpus(engine)
    tab = await new_tab(browser, base_url, width=390, height=844)
    await tab.sign_in(c.key, f"{CONSOLE}?sessionId={c.viewed}")
    await open_panel(tab)
    link = tab.page.locator(".neighbour").nth(2).locator(".neighbour-title")
    await link.evaluate("(el) => el.scrollIntoView({block: 'center'})")
    left_at = await tab.page.evaluate("() => window.scrollY")
    assert left_at > 300
    before = len(tab.graphql)
    await link.click()
    await expect(tab.page.get_by_role("heading", level=1)).to_have_text(
        "Baggage allowance question"
    )
    await expect(tab.page.get_by_role("button", name="Similar sessions")).to_have_attribute(
        "aria-expanded", "false"
    )

    await tab.page.go_back()
    await expect(tab.page.get_by_role("heading", level=1)).to_have_text(
        "Refund for a cancelled flight"
    )
    await expect(tab.page.get_by_role("button", name="Similar sessions")).to_have_attribute(
        "aria-expanded", "true"
    )
    await expect(tab.page.locator(".neighbour")).to_have_count(3)
    await tab.page.wait_for_function("(y) => Math.abs(window.scrollY - y) <= 2", arg=left_at)
    # Back sends one request for the page and its neighbours, or none if the browser kept it.
    returned = tab.graphql[before + 1 :]
    assert len(returned) <= 1
    assert all("similarSessions(" in tab.document(r) for r in returned)
    assert tab.problems == []
