"""The console's "Failure modes" page (issue #28): reached from the top bar; one card per group
(new or recurring, since when, a daily bar chart, the top shared terms, the representative's
title); its window and status kept in the address, so Back and reload restore them; a card
opens the representative with its panel open and the group's other members listed; shared
terms marked in both passages of a match, as text nodes and <mark> only; at laptop and phone
width, with an axe-core audit."""

from __future__ import annotations

import pytest
from playwright.async_api import Browser, expect
from sqlalchemy.ext.asyncio import AsyncEngine

from tests.support.console_browser import CONSOLE, Tab, new_tab
from tests.support.failures import lexical_failures

pytestmark = pytest.mark.browser
PAGE = f"{CONSOLE}?failureModes=7"


async def cards(tab: Tab) -> list[str]:
    return await tab.page.locator(".failure-card .card-title").all_inner_texts()


async def test_the_top_bar_leads_to_the_cards_of_the_window(
    engine: AsyncEngine, browser: Browser, base_url: str
) -> None:
    key, _ = await lexical_failures(engine)
    tab = await new_tab(browser, base_url)
    await tab.sign_in(key)
    await tab.page.get_by_role("link", name="Failure modes").click()
    await expect(tab.page.get_by_role("heading", name="Failure modes", level=1)).to_be_visible()
    await expect(tab.page.locator(".failure-card")).to_have_count(3)
    assert "failureModes=7" in tab.page.url
    await expect(tab.page.get_by_role("link", name="Failure modes")).to_have_attribute(
        "aria-current", "page"
    )
    modes = await tab.page.locator(".failure-card .mode").all_inner_texts()
    assert modes == ["New", "New", "Recurring"]  # the refund failed a month ago too
    await expect(tab.page.locator(".failure-card .card-size").first).to_have_text("4 sessions")
    # Its share of the sessions grouped, and a bar as long as its share of the largest group.
    await expect(tab.page.locator(".failure-card .card-share").first).to_have_text(" (33% of 12)")
    widths = await tab.page.locator(".failure-card .size-bar").evaluate_all(
        "(bars) => bars.map((b) => b.style.width)"
    )
    assert widths == ["100%", "100%", "100%"]
    # Eight days of bars: the window's first day to today.
    assert await tab.page.locator(".failure-card").first.locator(".mini-chart .bar").count() == 8
    terms = tab.page.locator(".failure-card").first.locator(".terms li")
    assert await terms.count() >= 2
    await expect(tab.page.locator(".failure-card").nth(2)).to_contain_text(
        "Seen before the window: Refund failure last month"
    )
    assert await tab.page.locator("#view").evaluate("(v) => v.innerText.includes('null')") is False
    assert tab.problems == []


async def test_the_window_and_status_live_in_the_address(
    engine: AsyncEngine, browser: Browser, base_url: str
) -> None:
    key, _ = await lexical_failures(engine)
    tab = await new_tab(browser, base_url)
    await tab.sign_in(key, PAGE)
    await expect(tab.page.locator(".failure-card")).to_have_count(3)
    await tab.page.get_by_role("link", name="Last day").click()
    await expect(tab.page.locator(".lede")).to_contain_text("in the last day")
    assert "failureModes=1" in tab.page.url
    await tab.page.get_by_role("link", name="Last 30 days").click()
    await expect(tab.page.locator(".lede")).to_contain_text("in the last 30 days")
    await tab.page.get_by_label("Sessions' status").select_option("")  # any status
    await tab.page.get_by_role("button", name="Apply").click()
    await expect(tab.page.locator(".lede")).to_contain_text("15 sessions of any status")
    assert "failureModes=30" in tab.page.url and "failureStatus=" in tab.page.url
    await tab.page.reload()
    await expect(tab.page.locator(".lede")).to_contain_text("15 sessions of any status")
    await tab.page.go_back()
    await expect(tab.page.locator(".lede")).to_contain_text("12 sessions with status “failed”")
    await tab.page.go_back()
    await expect(tab.page.locator(".lede")).to_contain_text("in the last day")
    await expect(tab.page.get_by_role("link", name="Last day")).to_have_attribute(
        "aria-current", "page"
    )
    assert tab.problems == []


async def test_a_card_opens_its_representative_with_the_panel_and_the_group(
    engine: AsyncEngine, browser: Browser, base_url: str
) -> None:
    key, made = await lexical_failures(engine)
    tab = await new_tab(browser, base_url)
    await tab.sign_in(key, PAGE)
    first = tab.page.locator(".failure-card .card-title a").first
    title = await first.inner_text()
    # The card names the grouping it was shown from; the session page asks for that one.
    assert "failureAsOf=" in (await first.get_attribute("href") or "")
    asked: list[dict[str, object]] = []
    tab.page.on(
        "request",
        lambda r: asked.append(r.post_data_json or {}) if r.url.endswith("/graphql") else None,
    )
    await first.click()
    await expect(tab.page.get_by_role("heading", name=title, level=1)).to_be_visible()
    await expect(tab.page.get_by_role("button", name="Similar sessions")).to_have_attribute(
        "aria-expanded", "true"
    )
    group = tab.page.locator(".failure-group")
    await expect(group.locator(".member")).to_have_count(3)  # the other three of four
    await expect(group).to_contain_text("4 sessions with status “failed” in the last 7 days")
    pinned = [a for a in asked if "ConsoleFailureGroup" in str(a.get("query", ""))]
    assert pinned and all(str(a["variables"]["asOf"]) for a in pinned)  # type: ignore[index]
    kind = title.split()[0].lower()
    shown = {await a.get_attribute("href") for a in await group.locator(".member-title").all()}
    assert all(any(sid in (h or "") for sid in made[kind]) for h in shown)
    await expect(tab.page.locator(".neighbour").first).to_be_visible()
    assert await tab.page.locator("#view").evaluate("(v) => v.innerText.includes('null')") is False
    assert tab.problems == []


async def test_shared_terms_are_marked_in_both_passages_as_text(
    engine: AsyncEngine, browser: Browser, base_url: str
) -> None:
    key, made = await lexical_failures(engine)
    tab = await new_tab(browser, base_url)
    await tab.sign_in(key, f"{CONSOLE}?sessionId={made['payment'][0]}&similar=open")
    match = tab.page.locator(".neighbour .match").first
    await expect(match.locator(".side-theirs mark").first).to_be_visible()
    theirs = await match.locator(".side-theirs mark").all_inner_texts()
    ours = await match.locator(".side-ours mark").all_inner_texts()
    listed = (await match.locator(".match-terms").inner_text()).removeprefix("Shared terms: ")
    terms = set(listed.split(", "))
    assert {t.lower() for t in theirs} <= terms and {t.lower() for t in ours} <= terms
    assert {t.lower() for t in theirs} & {t.lower() for t in ours}
    # Only text nodes and <mark> elements inside a passage.
    kinds = await tab.page.evaluate(
        """() => [...document.querySelectorAll('.passage')].flatMap((p) =>
            [...p.childNodes].map((n) => n.nodeType === 3 ? '#text' : n.nodeName))"""
    )
    assert set(kinds) <= {"#text", "MARK"} and "MARK" in kinds
    marks_inside = await tab.page.locator(".passage mark *").count()
    assert marks_inside == 0
    assert tab.problems == []


@pytest.mark.parametrize(("width", "height"), [(1280, 800), (390, 844)])
async def test_laptop_and_phone_widths_and_no_serious_violation(
    engine: AsyncEngine, browser: Browser, base_url: str, width: int, height: int
) -> None:
    key, _ = await lexical_failures(engine)
    tab = await new_tab(browser, base_url, width=width, height=height)
    await tab.sign_in(key, PAGE)
    await expect(tab.page.locator(".failure-card")).to_have_count(3)
    boxes = [await c.bounding_box() for c in await tab.page.locator(".failure-card").all()]
    assert all(b is not None for b in boxes)
    lefts = {round(b["x"]) for b in boxes if b is not None}
    assert len(lefts) == (3 if width == 1280 else 1), "side by side on a laptop, stacked on a phone"
    wide = await tab.page.evaluate("() => document.documentElement.scrollWidth > window.innerWidth")
    assert not wide, "nothing runs past the screen's width"
    audited = {"failure modes": await tab.axe_violations()}
    await tab.page.locator(".failure-card .card-title a").first.click()
    await expect(tab.page.locator(".failure-group .member")).to_have_count(3)
    await expect(tab.page.locator("#similar-body")).to_have_attribute("aria-busy", "false")
    audited["a card's session, its group and panel"] = await tab.axe_violations()
    assert {page: v for page, v in audited.items() if v} == {}
    assert tab.problems == []
