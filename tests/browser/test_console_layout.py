"""Where the Similar sessions panel sits: at laptop width a column beside the replay that stays
in view, at phone width a toggle right under the header; its toggle in the first viewport."""

from __future__ import annotations

import pytest
from playwright.async_api import Browser, expect
from sqlalchemy.ext.asyncio import AsyncEngine

from tests.support.console_browser import CONSOLE, corpus, new_tab, open_panel
from tests.support.world import World

pytestmark = pytest.mark.browser


async def with_long_replay(engine: AsyncEngine) -> tuple[str, str]:
    """The corpus's viewed session with 60 more turns, so its page scrolls."""
    c = await corpus(engine)
    world = World()
    for n in range(4, 64):
        world.activity(c.viewed, n, f"Turn {n}: checking the reservation once more.")
    await world.write(engine)
    return c.key, c.viewed


async def test_at_laptop_width_the_panel_is_a_column_beside_the_replay(
    engine: AsyncEngine, browser: Browser, base_url: str
) -> None:
    key, viewed = await with_long_replay(engine)
    tab = await new_tab(browser, base_url, width=1280, height=800)
    await tab.sign_in(key, f"{CONSOLE}?sessionId={viewed}")
    toggle = tab.page.get_by_role("button", name="Similar sessions")
    await expect(toggle).to_be_in_viewport()
    box = await toggle.bounding_box()
    assert box is not None and box["y"] + box["height"] <= 800 / 2
    replay = await tab.page.locator(".replay").bounding_box()
    panel = await tab.page.locator(".panel").bounding_box()
    assert replay is not None and panel is not None
    assert panel["x"] >= replay["x"] + replay["width"], "the panel is beside the replay"
    assert panel["y"] < replay["y"], "its top is level with the header, above the replay"

    await open_panel(tab)
    await expect(tab.page.locator(".neighbour")).to_have_count(3)
    # Scrolled to the end of the replay, the panel is still in view.
    await tab.page.evaluate("() => window.scrollTo(0, document.body.scrollHeight)")
    await tab.page.wait_for_function("() => window.scrollY > 1500")
    await expect(tab.page.locator(".panel")).to_be_in_viewport()
    await expect(tab.page.locator(".neighbour").first).to_be_in_viewport()
    assert tab.problems == []


async def test_at_phone_width_the_toggle_sits_under_the_header(
    engine: AsyncEngine, browser: Browser, base_url: str
) -> None:
    key, viewed = await with_long_replay(engine)
    tab = await new_tab(browser, base_url, width=390, height=844)
    await tab.sign_in(key, f"{CONSOLE}?sessionId={viewed}")
    toggle = tab.page.get_by_role("button", name="Similar sessions")
    box = await toggle.bounding_box()
    assert box is not None and box["y"] + box["height"] <= 844
    header = await tab.page.locator(".session-header").bounding_box()
    replay = await tab.page.locator(".replay").bounding_box()
    assert header is not None and replay is not None
    assert header["y"] + header["height"] <= box["y"] < replay["y"]
    assert box["width"] >= 300, "a full-width toggle, easy to hit"
    await open_panel(tab)
    await expect(tab.page.locator(".neighbour").first).to_be_in_viewport()
    width = await tab.page.evaluate("() => document.documentElement.scrollWidth")
    assert width <= 390
    assert tab.problems == []
