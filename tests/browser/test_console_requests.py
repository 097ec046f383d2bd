"""Which GraphQL requests the session page sends (issue #18): one request for header, replay
and neighbours when the panel is to be shown; otherwise the replay alone, then the neighbours
once when the panel is opened, and nothing when it is opened again."""

from __future__ import annotations

import re

import pytest
from playwright.async_api import Request, Route, expect
from sqlalchemy.ext.asyncio import AsyncEngine

from tests.support.console_browser import CONSOLE, Tab, corpus

pytestmark = pytest.mark.browser


def asks_replay_and_neighbours(tab: Tab, request: Request) -> bool:
    document = tab.document(request)
    return "replayPage(" in document and "similarSessions(" in document


async def land(tab: Tab, key: str, path: str) -> int:
    """Signs in on the list, then opens `path`; the number of requests sent before it."""
    await tab.sign_in(key)
    before = len(tab.graphql)
    await tab.open(path)
    await expect(tab.page.locator(".entry").first).to_be_visible()
    return before


async def test_landing_with_the_panel_open_is_one_request_for_everything(
    engine: AsyncEngine, tab: Tab
) -> None:
    c = await corpus(engine)
    before = await land(tab, c.key, f"{CONSOLE}?sessionId={c.viewed}&similar=open")
    toggle = tab.page.get_by_role("button", name="Similar sessions")
    await expect(toggle).to_have_attribute("aria-expanded", "true")
    await expect(tab.page.locator(".neighbour")).to_have_count(3)
    landing = tab.graphql[before:]
    assert len(landing) == 1
    assert asks_replay_and_neighbours(tab, landing[0])
    assert "timeline(" in tab.document(landing[0]), "the timeline comes in the same request"
    await expect(tab.page.locator(".timeline-bars .bar")).not_to_have_count(0)
    await expect(tab.page.locator(".entry")).to_have_count(4)

    await toggle.click()
    await expect(tab.page.locator("#similar-body")).to_be_hidden()
    await toggle.click()
    await expect(tab.page.locator(".neighbour")).to_have_count(3)
    assert len(tab.graphql) - before == 1, "closing and reopening asks nothing"


async def test_a_collapsed_landing_asks_the_replay_then_the_neighbours_once(
    engine: AsyncEngine, tab: Tab
) -> None:
    c = await corpus(engine)
    before = await land(tab, c.key, f"{CONSOLE}?sessionId={c.viewed}")
    [landing] = tab.graphql[before:]
    assert "replayPage(" in tab.document(landing)
    assert "similarSessions" not in tab.document(landing)

    toggle = tab.page.get_by_role("button", name="Similar sessions")
    await toggle.click()
    await expect(tab.page.locator(".neighbour")).to_have_count(3)
    [_, opened] = tab.graphql[before:]
    assert "similarSessions(" in tab.document(opened)
    assert "timeline(" in tab.document(opened)
    assert "replayPage" not in tab.document(opened)

    await toggle.click()
    await toggle.click()
    await expect(tab.page.locator(".neighbour")).to_have_count(3)
    assert len(tab.graphql) - before == 2, "reopening asks nothing"


async def test_the_open_panel_is_kept_in_the_address_and_on_reload(
    engine: AsyncEngine, tab: Tab
) -> None:
    c = await corpus(engine)
    before = await land(tab, c.key, f"{CONSOLE}?sessionId={c.viewed}")
    await tab.page.get_by_role("button", name="Similar sessions").click()
    await expect(tab.page.locator(".neighbour")).to_have_count(3)
    assert tab.page.url.endswith(f"?sessionId={c.viewed}&similar=open")

    await tab.page.reload()
    await expect(tab.page.locator(".neighbour")).to_have_count(3)
    reloaded = tab.graphql[before + 2 :]
    assert len(reloaded) == 1 and asks_replay_and_neighbours(tab, reloaded[0])

    await tab.page.get_by_role("button", name="Similar sessions").click()
    assert tab.page.url.endswith(f"?sessionId={c.viewed}")


async def test_always_open_is_a_preference_of_this_browser(engine: AsyncEngine, tab: Tab) -> None:
    c = await corpus(engine)
    await land(tab, c.key, f"{CONSOLE}?sessionId={c.viewed}")
    await tab.page.get_by_role("button", name="Similar sessions").click()
    preference = tab.page.get_by_label("Always open this panel (this browser)")
    await preference.check()

    before = len(tab.graphql)
    await tab.open(f"{CONSOLE}?sessionId={c.related}")
    toggle = tab.page.get_by_role("button", name="Similar sessions")
    await expect(toggle).to_have_attribute("aria-expanded", "true")
    await expect(tab.page.locator("#similar-body")).to_have_attribute("aria-busy", "false")
    [landing] = tab.graphql[before:]
    assert asks_replay_and_neighbours(tab, landing)

    # Closed by hand, it stays closed for this page (Back, reload) despite the preference.
    await toggle.click()
    assert tab.page.url.endswith("&similar=closed")
    before = len(tab.graphql)
    await tab.page.reload()
    await expect(toggle).to_have_attribute("aria-expanded", "false")
    [landing] = tab.graphql[before:]
    assert "similarSessions" not in tab.document(landing)

    await tab.page.get_by_role("button", name="Similar sessions").click()
    await tab.page.get_by_label("Always open this panel (this browser)").uncheck()
    before = len(tab.graphql)
    await tab.open(f"{CONSOLE}?sessionId={c.loose}")
    await expect(tab.page.get_by_role("button", name="Similar sessions")).to_have_attribute(
        "aria-expanded", "false"
    )
    [landing] = tab.graphql[before:]
    assert "similarSessions" not in tab.document(landing)


async def test_without_the_feature_no_neighbours_are_asked_even_when_the_address_says_open(
    engine: AsyncEngine, tab: Tab
) -> None:
    c = await corpus(engine, features=())
    before = await land(tab, c.key, f"{CONSOLE}?sessionId={c.viewed}&similar=open")
    [landing] = tab.graphql[before:]
    assert "similarSessions" not in tab.document(landing)
    await expect(tab.page.get_by_role("button", name="Similar sessions")).to_have_count(0)


async def test_neighbours_that_fail_with_the_page_leave_the_page_and_a_retry(
    engine: AsyncEngine, tab: Tab
) -> None:
    c = await corpus(engine)
    failed: list[str] = []

    async def fail_the_neighbours_once(route: Route) -> None:
        document = tab.document(route.request)
        if "ConsoleSessionWithSimilar" not in document or failed:
            await route.continue_()
            return
        failed.append(document)
        # What the server answers when similarSessions (nullable) fails: that field is null.
        response = await route.fetch()
        body = await response.json()
        body["data"]["runtimeSession"]["similarSessions"] = None
        body["errors"] = [
            {
                "message": "the database is unavailable",
                "path": ["runtimeSession", "similarSessions"],
                "extensions": {"code": "UNAVAILABLE"},
            }
        ]
        await route.fulfill(response=response, json=body)

    await tab.page.route("**/graphql", fail_the_neighbours_once)
    before = await land(tab, c.key, f"{CONSOLE}?sessionId={c.viewed}&similar=open")
    await expect(tab.page.get_by_role("heading", level=1)).to_have_text(
        "Refund for a cancelled flight"
    )
    await expect(tab.page.locator(".entry")).to_have_count(4)
    problem = tab.page.locator("#similar-body [role=alert]")
    await expect(problem).to_have_text(
        re.compile(r"^Similar sessions could not be loaded\. The database is unavailable")
    )
    await problem.get_by_role("button", name="Retry").click()
    await expect(tab.page.locator(".neighbour")).to_have_count(3)
    names = [tab.document(r).split("(")[0].split()[-1] for r in tab.graphql[before:]]
    assert names == ["ConsoleSessionWithSimilar", "ConsoleSimilarSessions"]
