"""The Similar sessions panel in Chromium, as an operator uses it."""

from __future__ import annotations

import json
import re

import pytest
from playwright.async_api import Browser, Route, expect
from sqlalchemy.ext.asyncio import AsyncEngine

from tests.support.console_browser import (
    CONSOLE,
    SIMILAR_QUERY,
    Tab,
    corpus,
    new_tab,
    open_panel,
)
from tests.support.world import World, blend, direction

pytestmark = pytest.mark.browser


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
    assert json.loads(tab.similar_requests()[-1].post_data or "")["variables"]["id"] == c.close


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
    await expect(link).to_have_attribute(
        "href", f"{CONSOLE}?sessionId={c.close}#activity-{c.close_turn}"
    )
    await expect(neighbours.nth(1).locator(".neighbour-title")).to_have_attribute(
        "href", f"{CONSOLE}?sessionId={c.related}"
    )

    # A keyboard user reaches the band and sees the tooltip's number while it has focus.
    await link.focus()
    await tab.page.keyboard.press("Tab")
    band = neighbours.first.locator(".band")
    await expect(band).to_be_focused()
    shown = await band.evaluate("(el) => getComputedStyle(el, '::after').content")
    assert shown == json.dumps(await band.get_attribute("title"))
    # Both sides of a match: their passage, and this session's passage that found it.
    await expect(neighbours.first.locator(".side-theirs blockquote.passage")).to_have_text(
        "Cancelled flight; refund to card."
    )
    await expect(neighbours.first.locator(".side-ours blockquote.passage")).to_have_text(
        "My flight HAT136 was cancelled. I want a refund."
    )
    await expect(neighbours.first.locator(".side-theirs a")).to_have_attribute(
        "href", f"{CONSOLE}?sessionId={c.close}#activity-{c.close_turn}"
    )
    probe = neighbours.first.locator(".probe a")
    await expect(probe).to_have_attribute("href", f"#activity-{c.probe_activity}")
    # Each neighbour shows its status.
    await expect(neighbours.locator(".status")).to_have_text(["completed"] * 3)


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
    await expect(first.locator(".side-theirs .passage-withheld")).to_have_text(
        "Passage withheld: its text is not shown."
    )
    await expect(first).not_to_contain_text("Cancelled flight; refund to card.")
    await expect(
        tab.page.locator(".neighbour").nth(1).locator(".side-theirs blockquote.passage")
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
        # Nothing passed the floor: the API's sentence, and the nearest offered under it.
        ("nothing_similar", "Nothing was close enough to pass the model's floor"),
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
    await expect(tab.page.locator(".nearest")).to_have_count(1 if case == "nothing_similar" else 0)


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
