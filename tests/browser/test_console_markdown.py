"""Turns render as Markdown, and nothing stored in a session ever runs in the console: raw
HTML shows as text, links keep safe schemes only, code fences are text."""

from __future__ import annotations

import json
import random
from urllib.parse import quote

import pytest
from playwright.async_api import expect
from sqlalchemy.ext.asyncio import AsyncEngine

from tests.support.console_browser import CONSOLE, SAFE_HREF, Tab, assert_nothing_ran
from tests.support.world import World, blend, direction

pytestmark = pytest.mark.browser

MARKDOWN = """Here is **your booking**, with `ZFA04Y` as its code.

### Flights

1. HAT136 *New York* to Seattle
2. HAT079 back
   - seat 12A
   - ~~seat 14C~~

> Keep this for your records.

| flight | date |
|---|---|
| HAT136 | May 20 |

```json
{"reservation_id": "ZFA04Y"}
```

See [the policy](https://example.com/policy) or write to <mailto:help@example.com>."""

PAYLOADS = [
    "[click](javascript:window.__pwned='link') [data](data:text/html;base64,PHNjcmlwdD4=) "
    "[vb](VBScript:msgbox) [spaced]( javascript:window.__pwned='spaced' ) "
    "[entity](&#106;avascript:window.__pwned='entity') ![pic](javascript:window.__pwned='img')",
    "<img src=x onerror=\"window.__pwned='img'\"> <script>window.__pwned='script'</script> "
    "<iframe src=\"javascript:window.__pwned='iframe'\"></iframe> <svg onload=window.__pwned=1>",
    "```\n<script>window.__pwned='fence'</script>\n<img src=x onerror=window.__pwned=2>\n```",
    "<a href=\"javascript:window.__pwned='a'\">raw link</a> "
    "[quote](https://example.com/\"onmouseover=\"window.__pwned='attr') **<b onclick=x>b</b>**",
    "<style>body{display:none}</style><link rel=stylesheet href=//evil.example/x.css>"
    "<meta http-equiv=refresh content=0;url=javascript:window.__pwned=3>",
]
HOSTILE_TITLE = "<img src=x onerror=\"window.__pwned='title'\"> **not bold**"


async def hostile_world(engine: AsyncEngine) -> tuple[str, str]:
    world = World()
    account, key = world.account()
    viewed = world.session(account, HOSTILE_TITLE, day=2)
    world.activity(viewed, 0, MARKDOWN, role="assistant")
    for n, payload in enumerate(PAYLOADS, start=1):
        world.activity(viewed, n, payload)
    world.activity(viewed, 9, PAYLOADS[1], role="tool", kind="tool_result")
    world.chunk(viewed, blend(direction(1), direction(2), 0.0), content=PAYLOADS[1])
    other = world.session(account, HOSTILE_TITLE, day=1)
    world.chunk(other, blend(direction(1), direction(3), 0.1), content=PAYLOADS[3])
    await world.write(engine)
    return key, viewed


async def test_a_turn_renders_its_markdown(engine: AsyncEngine, tab: Tab) -> None:
    key, viewed = await hostile_world(engine)
    await tab.sign_in(key, f"{CONSOLE}?sessionId={viewed}")
    first = tab.page.locator(".entry").first
    await expect(first.locator(".preview strong")).to_have_text("your booking")
    await first.locator(".fold summary").click()  # a long turn is folded
    turn = first.locator(".fold .markdown")
    await expect(turn.locator("strong").first).to_have_text("your booking")
    await expect(turn.locator("p > code")).to_have_text("ZFA04Y")
    await expect(turn.locator(".md-heading")).to_have_text("Flights")
    await expect(turn.locator("ol > li")).to_have_count(2)
    await expect(turn.locator("ol > li > ul > li")).to_have_text(["seat 12A", "seat 14C"])
    await expect(turn.locator("del")).to_have_text("seat 14C")
    await expect(turn.locator("blockquote")).to_have_text("Keep this for your records.")
    await expect(turn.locator("table td")).to_have_text(["HAT136", "May 20"])
    await expect(turn.locator("pre > code.language-json")).to_have_text(
        '{"reservation_id": "ZFA04Y"}'
    )
    await expect(turn.get_by_role("link", name="the policy")).to_have_attribute(
        "href", "https://example.com/policy"
    )
    await expect(turn.get_by_role("link", name="the policy")).to_have_attribute(
        "rel", "noopener noreferrer nofollow"
    )
    shown = await turn.inner_text()
    assert "**" not in shown and "###" not in shown and "```" not in shown


async def test_stored_html_and_hostile_markdown_never_run(engine: AsyncEngine, tab: Tab) -> None:
    key, viewed = await hostile_world(engine)
    await tab.sign_in(key)
    await expect(tab.page.locator(".session-link").first).to_have_text(HOSTILE_TITLE)
    await assert_nothing_ran(tab)

    await tab.open(f"{CONSOLE}?sessionId={viewed}&similar=open")
    await expect(tab.page.get_by_role("heading", level=1)).to_have_text(HOSTILE_TITLE)
    await expect(tab.page.locator(".neighbour")).to_have_count(1)
    entries = tab.page.locator(".entry")
    # Raw HTML shows as the text it is; unsafe links show their label only.
    await expect(entries.nth(2)).to_contain_text("<img src=x onerror=")
    await expect(entries.nth(2)).to_contain_text("<script>window.__pwned='script'</script>")
    await expect(entries.nth(3).locator("pre code")).to_contain_text("<script>")
    await expect(entries.nth(1).locator(".md-unsafe-link")).to_have_text(
        ["click", "data", "vb", "spaced", "entity", "image: pic"]
    )
    # The destination percent-encoded, as CommonMark renders it: its quotes stay in the URL.
    await expect(entries.nth(4).get_by_role("link", name="quote")).to_have_attribute(
        "href", "https://example.com/%22onmouseover=%22window.__pwned='attr'"
    )
    await expect(tab.page.locator(".entry.is-tool .content-code")).to_contain_text("<svg onload")
    await expect(tab.page.locator(".side-theirs .passage")).to_contain_text("<a href=")
    await expect(tab.page.locator(".side-ours .passage")).to_contain_text("<img src=x")
    for link in await tab.page.locator("#view .markdown a:visible").all():
        await link.hover()
    await assert_nothing_ran(tab)


FRAGMENTS = [
    "*",
    "**",
    "_",
    "__",
    "~~",
    "`",
    "```",
    "[",
    "]",
    "(",
    ")",
    "![",
    "<",
    ">",
    "#",
    "### ",
    "- ",
    "1. ",
    "> ",
    "|",
    "---",
    "\n",
    "\n\n",
    "  ",
    "\\",
    "javascript:",
    "JaVaScRiPt:",
    "https://x.example/",
    "mailto:a@b",
    "data:text/html,",
    "<script>",
    "</script>",
    "<img ",
    "onerror=",
    '"',
    "'",
    "&#106;",
    "text",
    "é",
    "\u202e",
    "\U0001f600",
]
ALLOWED_TAGS = {
    "DIV",
    "P",
    "BR",
    "STRONG",
    "EM",
    "DEL",
    "CODE",
    "PRE",
    "A",
    "SPAN",
    "UL",
    "OL",
    "LI",
    "BLOCKQUOTE",
    "HR",
    "TABLE",
    "THEAD",
    "TBODY",
    "TR",
    "TH",
    "TD",
}
PATHOLOGICAL = [
    "*" * 20_000,
    "*a" * 10_000,
    "_a " * 8_000,
    "[" * 20_000,
    "[a](" * 5_000,
    "`" * 20_000,
    "` " * 10_000,
    "> " * 3_000 + "deep",
    "\n".join("  " * n + "- item" for n in range(2_000)),
    "|a|\n|-|\n" + "|x|\n" * 5_000,
    "x" * 60_000,
]


async def test_any_text_renders_to_safe_elements_only(engine: AsyncEngine, tab: Tab) -> None:
    key, _ = await hostile_world(engine)
    await tab.sign_in(key)
    rng = random.Random(13)  # a fixed seed: a failure can be replayed
    texts = ["".join(rng.choices(FRAGMENTS, k=rng.randint(1, 60))) for _ in range(600)]
    found = await tab.page.evaluate(
        """async (texts) => {
            const { markdown } = await import('/console/static/markdown.js');
            const tags = new Set(), attributes = new Set(), hrefs = new Set();
            for (const text of texts) {
                const root = markdown(text);
                for (const el of [root, ...root.querySelectorAll('*')]) {
                    tags.add(el.tagName);
                    for (const a of el.attributes) attributes.add(a.name);
                    if (el.hasAttribute('href')) hrefs.add(el.getAttribute('href'));
                }
            }
            return { tags: [...tags], attributes: [...attributes], hrefs: [...hrefs] };
        }""",
        texts + PATHOLOGICAL,
    )
    assert set(found["tags"]) <= ALLOWED_TAGS, found["tags"]
    assert set(found["attributes"]) <= {"class", "href", "rel", "start"}, found["attributes"]
    assert all(h.lower().startswith(SAFE_HREF) for h in found["hrefs"]), json.dumps(found["hrefs"])
    assert await tab.page.evaluate("() => window.__pwned") is None


HOSTILE_STATUS = "<img src=x onerror=window.__pwned=9>"


async def test_a_hostile_status_or_filter_in_the_address_stays_text(
    engine: AsyncEngine, tab: Tab
) -> None:
    world = World()
    account, key = world.account()
    viewed = world.session(account, "the viewed session", day=2)
    world.chunk(viewed, blend(direction(1), direction(2), 0.0))
    other = world.session(account, HOSTILE_TITLE, day=1, status=HOSTILE_STATUS)
    world.chunk(other, blend(direction(1), direction(3), 0.1), content=PAYLOADS[1])
    await world.write(engine)
    page = f"{CONSOLE}?sessionId={viewed}&similar=open"

    await tab.sign_in(key, f"{page}&similarStatus={quote(HOSTILE_STATUS)}")
    await expect(tab.page.locator(".neighbour-title")).to_have_text([HOSTILE_TITLE])
    await expect(tab.page.locator(".neighbour .status")).to_have_text(
        HOSTILE_STATUS.replace("_", " ")
    )
    await expect(tab.page.get_by_label("Neighbours' status")).to_have_value(HOSTILE_STATUS)
    await expect(tab.page.locator("#similar-status option")).to_contain_text([HOSTILE_STATUS])
    await assert_nothing_ran(tab)

    script = "<script>window.__pwned='filter'</script>"
    await tab.open(f"{page}&similarStatus={quote(script)}")
    await expect(tab.page.locator("#similar-body .empty").last).to_contain_text(script)
    await assert_nothing_ran(tab)


# Turns a quadratic parser took seconds on (issue #30), each as long as a turn may be and
# still be rendered (50,000 characters), against a plain turn of the same length.
HOSTILE_TURNS = [
    "[" * 24_999 + "]" * 24_999,
    "| a | b |\n-" + " " * 49_000 + "x",
]
PLAIN_TURN = ("Some **bold** words and a `code` span. " * 1_300)[:49_998]
# The bound: a hostile turn renders within 4 times a plain turn of its length (the hand-written
# renderer took about 100 times: 2.5 s against 20 ms). Medians of 5, by the page's own clock.
WITHIN_PLAIN = 4
MEDIAN_RENDERS = """async (texts) => {
    const { markdown } = await import('/console/static/markdown.js');
    const median = (text) => {
        const times = [];
        for (let run = 0; run < 5; run += 1) {
            const t0 = performance.now();
            const root = document.body.appendChild(markdown(text));
            void root.offsetHeight;
            times.push(performance.now() - t0);
            root.remove();
        }
        return times.sort((a, b) => a - b)[2];
    };
    markdown(texts[0]); // compiled before it is timed
    return texts.map(median);
}"""


async def test_a_hostile_turn_renders_about_as_fast_as_a_plain_one(tab: Tab) -> None:
    await tab.open(CONSOLE)
    plain, *hostile = await tab.page.evaluate(MEDIAN_RENDERS, [PLAIN_TURN, *HOSTILE_TURNS])
    assert max(hostile) <= WITHIN_PLAIN * plain, (plain, hostile)


async def test_a_turn_nested_past_the_bound_shows_whole_as_text(tab: Tab) -> None:
    await tab.open(CONSOLE)
    nested = ["> " * n + "deep\n\nafter" for n in (18, 19, 30)]
    nested.append("\n".join("  " * n + f"- item {n}" for n in range(12)) + "\n\nafter")
    shown = await tab.page.evaluate(
        """async (texts) => {
            const { markdown } = await import('/console/static/markdown.js');
            return texts.map((text) => {
                const root = markdown(text);
                return [root.classList.contains('markdown-plain'), root.textContent,
                        root.querySelectorAll('blockquote').length];
            });
        }""",
        nested,
    )
    # 18 quotes deep is Markdown; deeper, nothing is dropped: the turn is its own text.
    assert shown[0] == [False, "deepafter", 18]
    assert shown[1:] == [[True, text, 0] for text in nested[1:]]
