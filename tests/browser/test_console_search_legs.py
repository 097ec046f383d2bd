"""The search page after issue #26: which legs of the search ran, said in words; the words of
each passage the text matched, marked (text nodes and <mark> only); and, when nothing was close
enough, the API's sentence with the nearest sessions under it, each labelled loose. The panel
offers its nearest the same way."""

from __future__ import annotations

import re
from collections.abc import AsyncIterator

import pytest
from playwright.async_api import Browser, Locator, expect
from sqlalchemy.ext.asyncio import AsyncEngine

from resolvers.rules.degraded import SENTENCES
from tests.support.console_browser import CONSOLE, Tab, assert_nothing_ran, new_tab, open_panel
from tests.support.console_server import serving
from tests.support.console_worlds import (
    DENSE_MODEL,
    MIGRATION,
    QUESTION,
    ask,
    described_world,
    far_world,
    with_dense_model,
)

pytestmark = pytest.mark.browser

NOT_EMBEDDED = (
    "the search text could not be embedded with the account's model; only its words were compared."
)
NOTHING_CLOSE = SENTENCES["similar_nothing_close_enough"]
# Shares no word (no stem) with any passage of the described world.
UNRELATED = "the customer wants a seat upgrade"
MARKUP = "<b>x</b>"
PASSAGE = f"{MIGRATION} {MARKUP} MIGRATIONS in the tablespace"
WORDS_OF = """query($text: String!) {
  searchSessions(text: $text) { results { matches { text matchedWords } } }
}"""
NEAREST_OF = """query($id: UUID!) {
  runtimeSession(id: $id) { similarSessions { results { title } nearest { title } } }
}"""


@pytest.fixture
async def dense_url(database_url: str) -> AsyncIterator[str]:
    """A second server on the test database whose searches can embed with DENSE_MODEL."""
    with serving(database_url, with_dense_model()) as base:
        yield base


@pytest.fixture
async def capped_url(database_url: str) -> AsyncIterator[str]:
    """A second server on the test database whose DENSE_MODEL has a price."""
    with serving(database_url, with_dense_model(priced=True)) as base:
        yield base


async def search(tab: Tab, text: str) -> Locator:
    """The section of sessions that went like `text`, once its answer is shown."""
    await tab.open(f"{CONSOLE}?q={text}")
    section = tab.page.get_by_role("region", name="Sessions that went like this")
    await expect(section.locator(".found-body")).to_have_attribute("aria-busy", "false")
    return section


async def marks_of(passage: Locator) -> list[str]:
    """The marked words of a passage, after checking it holds text nodes and marks only."""
    kinds = await passage.evaluate(
        """(el) => [...el.childNodes].map((n) => n.nodeType === Node.TEXT_NODE ? '#text'
            : n.nodeName + (n.childNodes.length === 1 && n.firstChild.nodeType === 3 ? '' : '!'))"""
    )
    assert set(kinds) <= {"#text", "MARK"}, kinds
    return await passage.locator("mark").all_inner_texts()


async def test_the_words_the_text_matched_are_marked_in_each_passage(
    engine: AsyncEngine, tab: Tab
) -> None:
    w = await described_world(engine, passage=PASSAGE)
    await tab.sign_in(w.key)
    section = await search(tab, QUESTION)
    passages = section.locator(".found .passage")
    await expect(passages).to_have_count(2)
    answer = await ask(tab.base, w.key, WORDS_OF, text=QUESTION)
    shown = {
        m["text"]: m["matchedWords"]
        for r in answer["searchSessions"]["results"]
        for m in r["matches"]
    }
    for i in range(2):
        passage = passages.nth(i)
        text = await passage.text_content()
        assert text in shown, "the passage is the API's text, word for word"
        # Every occurrence, whatever its case, and whole words only ("tablespace" is not
        # "table"); the markup-looking text is text.
        assert await marks_of(passage) == [
            "migration",
            "failed",
            "lock",
            "timeout",
            "table",
            "orders",
            "MIGRATIONS",
        ]
        expected = [t for t in re.findall(r"\w+", text) if t.lower() in shown[text]]
        assert await marks_of(passage) == expected
        assert MARKUP in text
        await expect(passage.locator("b")).to_have_count(0)
    await assert_nothing_ran(tab)


async def test_a_lexical_account_is_matched_by_words_only(engine: AsyncEngine, tab: Tab) -> None:
    w = await described_world(engine)
    await tab.sign_in(w.key)
    section = await search(tab, QUESTION)
    await expect(section.locator(".legs")).to_have_text(
        "Matched by words only: this account has no model that compares meaning."
    )
    await expect(section.locator(".found")).to_have_count(2)
    await expect(section.locator(".degraded")).to_have_count(0)


async def test_a_dense_leg_that_failed_is_named_with_the_apis_sentence(
    engine: AsyncEngine, tab: Tab
) -> None:
    # This server has no embedder for the account's model: its dense leg cannot run.
    w = await described_world(engine, model=DENSE_MODEL)
    await tab.sign_in(w.key)
    section = await search(tab, QUESTION)
    await expect(section.locator(".legs")).to_have_text(f"Matched by words only: {NOT_EMBEDDED}")
    # The words still find the sessions, marked; the note does not say it all again.
    await expect(section.locator(".found")).to_have_count(2)
    await expect(section.locator(".found .passage mark").first).to_have_text("migration")
    await expect(section.locator(".degraded")).to_have_count(0)


async def test_a_dense_leg_past_the_daily_cap_says_so(
    engine: AsyncEngine, browser: Browser, capped_url: str
) -> None:
    w = await described_world(engine, model=DENSE_MODEL, daily_cap_usd=0.0)
    tab = await new_tab(browser, capped_url)
    await tab.sign_in(w.key)
    section = await search(tab, QUESTION)
    await expect(section.locator(".legs")).to_have_text(
        "Matched by words only: the account has reached its daily embedding cap; the search "
        "text was not embedded."
    )
    await expect(section.locator(".found")).to_have_count(2)
    await expect(section.locator(".degraded")).to_have_count(0)
    assert tab.problems == []


async def test_both_legs_that_ran_are_named_with_the_dense_model(
    engine: AsyncEngine, browser: Browser, dense_url: str
) -> None:
    w = await described_world(engine, model=DENSE_MODEL)
    tab = await new_tab(browser, dense_url)
    await tab.sign_in(w.key)
    section = await search(tab, QUESTION)
    await expect(section.locator(".legs")).to_have_text(
        "Matched by words and by meaning (words-384)."
    )
    await expect(section.locator(".found")).to_have_count(2)
    await expect(section.locator(".fine-print")).to_have_text(
        f"Compared with model {DENSE_MODEL}; by meaning, a passage had to reach similarity 0.35."
    )
    assert tab.problems == []


async def test_nothing_close_enough_offers_the_nearest_labelled_loose(
    engine: AsyncEngine, tab: Tab
) -> None:
    w = await described_world(engine)
    await tab.sign_in(w.key)
    section = await search(tab, UNRELATED)
    offered = section.locator(".nearest-offered")
    await expect(offered.locator(".empty")).to_have_text(NOTHING_CLOSE)
    await expect(offered.get_by_role("heading")).to_have_text("Nearest sessions, below the floor")
    nearest = offered.locator(".nearest")
    await expect(nearest).to_have_count(3)
    assert await nearest.locator(".band").all_inner_texts() == ["loose"] * 3
    titles = await nearest.locator(".nearest-title").all_inner_texts()
    assert sorted(titles) == ["Nightly job #0", "Nightly job #1", "Refund to a card"]
    await expect(section.locator(".found")).to_have_count(0)
    await expect(section.locator(".degraded")).to_have_count(0)  # its one sentence is above
    await expect(section.locator("[role=status]")).to_have_text(
        "Nothing was close enough; 3 nearest sessions offered, labelled loose."
    )


async def test_the_panel_offers_its_nearest_labelled_loose(engine: AsyncEngine, tab: Tab) -> None:
    w = await far_world(engine)
    await tab.sign_in(w.key, f"{CONSOLE}?sessionId={w.viewed}")
    await open_panel(tab)
    panel = tab.page.locator("#similar-body")
    offered = panel.locator(".nearest-offered")
    await expect(offered.locator(".empty")).to_have_text(NOTHING_CLOSE)
    nearest = offered.locator(".nearest")
    await expect(nearest).to_have_count(3)
    answer = await ask(tab.base, w.key, NEAREST_OF, id=w.viewed)
    order = [n["title"] for n in answer["runtimeSession"]["similarSessions"]["nearest"]]
    assert sorted(order) == sorted(w.passages), "every other session, offered"
    assert await nearest.locator(".nearest-title").all_inner_texts() == order
    assert await nearest.locator(".band").all_inner_texts() == ["loose"] * 3
    theirs = await nearest.locator(".side-theirs .passage").all_inner_texts()
    assert theirs == [w.passages[title] for title in order]
    await expect(nearest.first.locator(".side-ours .passage")).to_have_text("the card was declined")
    await expect(panel.locator(".neighbour")).to_have_count(0)
    await expect(panel.locator(".degraded")).to_have_count(0)
    await expect(tab.page.locator(".panel > [role=status]")).to_have_text(
        "No session was close enough; 3 nearest sessions offered, labelled loose."
    )
