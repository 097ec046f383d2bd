"""Search by describing the failure (issue #17): a search's first page shows the sessions whose
title or source id contains the text and, beside them, the sessions with passages like it,
each with its band, its passages and a link to the turn; both asked at once."""

from __future__ import annotations

import asyncio
import json
import re

import pytest
from playwright.async_api import Browser, Route, expect
from sqlalchemy.ext.asyncio import AsyncEngine

from tests.support.console_browser import CONSOLE, Tab, assert_nothing_ran, new_tab
from tests.support.console_worlds import MIGRATION, QUESTION, described_world

pytestmark = pytest.mark.browser

NOT_EMBEDDED = (
    "The search text could not be embedded with the account's model; only its words were compared."
)


def operation(tab: Tab, document: str) -> str:
    return document.split("(")[0].split()[-1]


def operations(tab: Tab, start: int) -> list[str]:
    return [operation(tab, tab.document(r)) for r in tab.graphql[start:]]


async def search(tab: Tab, text: str) -> None:
    box = tab.page.get_by_role("searchbox")
    await box.fill(text)
    await box.press("Enter")
    await expect(tab.page.get_by_role("heading", level=1)).to_have_text(
        f"Sessions matching “{text}”"
    )


async def test_sessions_that_went_like_the_text_show_band_passage_and_turn(
    engine: AsyncEngine, tab: Tab
) -> None:
    w = await described_world(engine)
    await tab.sign_in(w.key)
    await search(tab, QUESTION)
    await expect(tab.page.locator(".titles .empty")).to_have_text(
        "No session's title or source id contains this text."
    )
    section = tab.page.get_by_role("region", name="Sessions that went like this")
    found = section.locator(".found")
    await expect(found.first).to_be_visible()
    titles = await found.locator(".found-title").all_inner_texts()
    assert sorted(titles[:2]) == ["Nightly job #0", "Nightly job #1"], titles
    assert "Their migration" not in titles, "another account's session"
    for i in range(2):
        item = found.nth(i)
        session = w.migrations[int((await item.locator(".found-title").inner_text())[-1])]
        turn_link = f"{CONSOLE}?sessionId={session}#activity-{w.turns[session]}"
        await expect(item.locator(".found-title")).to_have_attribute("href", turn_link)
        await expect(item.locator(".side-theirs a")).to_have_attribute("href", turn_link)
        await expect(item.locator(".side-theirs a")).to_have_text("Assistant message · passage #0")
        await expect(item.locator(".passage")).to_contain_text(MIGRATION)
        await expect(item.locator(".status")).to_have_text("failed")
        band = item.locator(".band")
        await expect(band).to_have_text(re.compile("^(close|related|loose)$"))
        assert re.fullmatch(r"Similarity 0\.\d\d", await band.get_attribute("title") or "")
        assert not re.search(r"\b0\.\d", await item.inner_text()), "a number outside the tooltip"

    # The passage's link lands on its turn, marked.
    first = found.first
    name = await first.locator(".found-title").inner_text()
    await first.locator(".side-theirs a").click()
    await expect(tab.page.get_by_role("heading", level=1)).to_have_text(name)
    marked = tab.page.locator(".entry[aria-current=true]")
    await expect(marked).to_contain_text(MIGRATION)


async def test_both_searches_are_asked_at_once_and_more_is_one_request(
    engine: AsyncEngine, tab: Tab
) -> None:
    # Titles that hold the text too: both sections have sessions to show.
    w = await described_world(engine, migrations=7, title=MIGRATION)
    await tab.sign_in(w.key)  # the account's features are known from here on
    described_sent = asyncio.Event()

    async def hold_the_titles_until_the_other_is_asked(route: Route) -> None:
        document = tab.document(route.request)
        if "ConsoleSearchSessions" in document:
            described_sent.set()
        elif "ConsoleSessionList" in document and "lock timeout" in (route.request.post_data or ""):
            # Asked one after the other, the second would never come while this one waits.
            await asyncio.wait_for(described_sent.wait(), timeout=10)
        await route.continue_()

    await tab.page.route("**/graphql", hold_the_titles_until_the_other_is_asked)
    before = len(tab.graphql)
    await tab.open(f"{CONSOLE}?q={MIGRATION}")
    found = tab.page.locator(".found")
    await expect(found).to_have_count(5)
    await expect(tab.page.locator(".session-link")).to_have_count(7)
    assert sorted(operations(tab, before)) == ["ConsoleSearchSessions", "ConsoleSessionList"]

    more = tab.page.get_by_role("button", name="Show more sessions that went like this")
    await more.click()
    await expect(found).to_have_count(7)
    [asked] = operations(tab, before + 2)
    assert asked == "ConsoleSearchSessions"
    assert json.loads(tab.graphql[-1].post_data or "")["variables"]["after"]
    await expect(found.nth(5).locator(".found-title")).to_be_focused()


async def test_a_text_that_could_not_be_embedded_is_still_matched_by_its_words(
    engine: AsyncEngine, tab: Tab
) -> None:
    w = await described_world(engine, enabled=False)
    await tab.sign_in(w.key)
    await search(tab, QUESTION)
    note = tab.page.locator(".described .degraded")
    await expect(note).to_contain_text(NOT_EMBEDDED)
    await expect(note).to_contain_text("Embeddings are not enabled for this account")
    await expect(tab.page.locator(".found")).to_have_count(2)
    await expect(tab.page.locator(".described [role=status]")).to_have_text(
        "2 sessions went like this."
    )


async def test_a_text_of_nothing_but_stopwords_finds_nothing_and_says_why(
    engine: AsyncEngine, tab: Tab
) -> None:
    # No word to match and nothing to embed: no session, and no nearest one to offer.
    w = await described_world(engine)
    await tab.sign_in(w.key)
    await search(tab, "and the of")
    await expect(tab.page.locator(".described .degraded")).to_have_text(NOT_EMBEDDED)
    await expect(tab.page.locator(".described .empty")).to_have_text(
        "No session has a passage like this text."
    )
    await expect(tab.page.locator(".described .nearest")).to_have_count(0)


async def test_without_the_feature_only_titles_are_searched(engine: AsyncEngine, tab: Tab) -> None:
    w = await described_world(engine, features=())
    await tab.sign_in(w.key)
    before = len(tab.graphql)
    await search(tab, "Nightly")
    await expect(tab.page.locator(".session-link")).to_have_count(2)
    await expect(tab.page.locator(".described")).to_have_count(0)
    assert operations(tab, before) == ["ConsoleSessionList"]


async def test_a_long_description_is_searched_by_meaning_only(
    engine: AsyncEngine, browser: Browser, base_url: str
) -> None:
    w = await described_world(engine)
    # A fresh tab lands on the search: features unknown, the second request waits for them.
    tab = await new_tab(browser, base_url)
    long_text = f"{QUESTION}. " * 6
    await tab.sign_in(w.key, f"{CONSOLE}?q={long_text.strip()}")
    heading = await tab.page.get_by_role("heading", level=1).inner_text()
    assert len(heading) <= 140 and heading.endswith("…”"), "the heading shortens it"
    await expect(tab.page.get_by_role("searchbox")).to_have_value(long_text.strip())
    await expect(tab.page.locator(".titles .empty")).to_have_text(
        "Titles and source ids are searched for texts of at most 200 characters."
    )
    await expect(tab.page.locator(".found").first).to_be_visible()
    assert operations(tab, 0) == ["ConsoleSessionList", "ConsoleSearchSessions"]
    assert json.loads(tab.graphql[0].post_data or "")["variables"]["search"] is None

    # Past the API's bound for a description, nothing is asked that it would refuse.
    await tab.open(f"{CONSOLE}?q={'x' * 2001}")
    await expect(tab.page.locator(".described .empty")).to_have_text(
        "Texts of at most 2,000 characters are compared."
    )
    assert operations(tab, 2) == ["ConsoleSessionList"]
    assert tab.problems == []


async def test_a_failed_search_leaves_the_titles_and_offers_a_retry(
    engine: AsyncEngine, tab: Tab
) -> None:
    w = await described_world(engine, title=MIGRATION)
    failed: list[str] = []

    async def fail_once(route: Route) -> None:
        if "ConsoleSearchSessions" in tab.document(route.request) and not failed:
            failed.append(route.request.url)
            await route.fulfill(status=503, content_type="application/json", body="{}")
            return
        await route.continue_()

    await tab.sign_in(w.key)
    await tab.page.route("**/graphql", fail_once)
    await search(tab, MIGRATION)
    await expect(tab.page.locator(".session-link")).to_have_count(2)
    problem = tab.page.locator(".described [role=alert]")
    await expect(problem).to_contain_text("The database is unavailable right now.")
    await problem.get_by_role("button", name="Retry").click()
    await expect(tab.page.locator(".found")).to_have_count(2)


async def test_the_keyboard_reaches_each_result_and_its_band(engine: AsyncEngine, tab: Tab) -> None:
    w = await described_world(engine)
    await tab.sign_in(w.key)
    await tab.page.keyboard.press("/")
    await tab.page.keyboard.type(QUESTION)
    await tab.page.keyboard.press("Enter")
    first = tab.page.locator(".found-title").first
    await expect(first).to_be_visible()
    for _ in range(12):
        await tab.page.keyboard.press("Tab")
        if await first.evaluate("(el) => el === document.activeElement"):
            break
    await expect(first).to_be_focused()
    await tab.page.keyboard.press("Tab")
    band = tab.page.locator(".found .band").first
    await expect(band).to_be_focused()
    shown = await band.evaluate("(el) => getComputedStyle(el, '::after').content")
    assert shown == json.dumps(await band.get_attribute("title"))


HOSTILE = "<img src=x onerror=\"window.__pwned='found'\"><script>window.__pwned=1</script>"


async def test_nothing_stored_runs_in_the_search_results(engine: AsyncEngine, tab: Tab) -> None:
    w = await described_world(engine, passage=f"{MIGRATION} {HOSTILE}")
    await tab.sign_in(w.key)
    await search(tab, QUESTION)
    await expect(tab.page.locator(".found .passage").first).to_contain_text(HOSTILE)
    await assert_nothing_ran(tab)
