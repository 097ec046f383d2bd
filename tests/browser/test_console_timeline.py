"""How often has this happened (issue #17): the panel's bar chart shows the API's counts, gaps
filled, by day, week or month without another request, in the neighbours' own request; the
bound is named when a probe reached it."""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from datetime import datetime, timedelta

import pytest
from playwright.async_api import Route, expect
from sqlalchemy.ext.asyncio import AsyncEngine

from tests.support.console_browser import CONSOLE, Tab, open_panel
from tests.support.console_worlds import ask, recurring_world
from tests.support.world import World, blend, direction

pytestmark = pytest.mark.browser

TIMED_OUT = "The comparison ran past its time budget; the list is empty rather than late."
TIMELINE = """
query($id: UUID!, $bucket: TimelineBucket!, $status: [String!]) {
  runtimeSession(id: $id) {
    similarSessions(status: $status) {
      timeline(bucket: $bucket) { sessions buckets { start sessions } degraded { reasons } }
    }
  }
}"""


async def api_counts(
    tab: Tab, key: str, viewed: str, bucket: str, status: list[str] | None = None
) -> tuple[int, dict[datetime, int]]:
    data = await ask(tab.base, key, TIMELINE, id=viewed, bucket=bucket, status=status)
    timeline = data["runtimeSession"]["similarSessions"]["timeline"]
    counts = {datetime.fromisoformat(b["start"]): b["sessions"] for b in timeline["buckets"]}
    return timeline["sessions"], counts


async def shown_bars(tab: Tab) -> list[tuple[datetime, int]]:
    bars = await tab.page.locator(".timeline-bars .bar").evaluate_all(
        "(bars) => bars.map((b) => [b.dataset.start, Number(b.dataset.sessions)])"
    )
    return [(datetime.fromisoformat(start), n) for start, n in bars]


def following(start: datetime, bucket: str) -> datetime:
    if bucket == "DAY":
        return start + timedelta(days=1)
    if bucket == "WEEK":
        return start + timedelta(days=7)
    return (start + timedelta(days=32)).replace(day=1)


def every_bucket(counts: dict[datetime, int], bucket: str) -> list[tuple[datetime, int]]:
    """The API's non-empty buckets with the empty ones between them, oldest first."""
    starts, last = [min(counts)], max(counts)
    while starts[-1] < last:
        starts.append(following(starts[-1], bucket))
    return [(s, counts.get(s, 0)) for s in starts]


async def test_the_bars_are_the_apis_counts_by_day_week_and_month(
    engine: AsyncEngine, tab: Tab
) -> None:
    w = await recurring_world(engine)
    await tab.sign_in(w.key, f"{CONSOLE}?sessionId={w.viewed}&similar=open")
    await expect(tab.page.locator(".timeline-bars")).to_be_visible()
    landing = len(tab.graphql)
    summary = tab.page.locator(".timeline-summary")
    await expect(summary).to_contain_text(f"{w.related} sessions went like this one")

    # 76 days apart: more than fits as days, so the chart opens by week.
    weekly = tab.page.get_by_role("button", name="By week")
    await expect(weekly).to_have_attribute("aria-pressed", "true")
    for bucket in ("WEEK", "DAY", "MONTH"):
        await tab.page.get_by_role("button", name=f"By {bucket.lower()}").click()
        total, counts = await api_counts(tab, w.key, w.viewed, bucket)
        assert total == w.related
        assert await shown_bars(tab) == every_bucket(counts, bucket)
        rows = tab.page.locator(".timeline table tbody tr")
        await expect(rows).to_have_count(len(counts))
        await expect(rows.locator("td")).to_have_text([str(n) for n in counts.values()])
    assert [
        len(every_bucket((await api_counts(tab, w.key, w.viewed, b))[1], b))
        for b in ("DAY", "WEEK", "MONTH")
    ] == [76, 12, 3]
    assert len(tab.graphql) == landing, "another grouping asks nothing"

    # The grouping chosen survives the panel's next answer (a filter).
    await tab.page.get_by_label("Neighbours' status").select_option("failed")
    await tab.page.get_by_role("button", name="Apply").click()
    await expect(tab.page.locator("#similar-body")).to_have_attribute("aria-busy", "false")
    await expect(tab.page.get_by_role("button", name="By month")).to_have_attribute(
        "aria-pressed", "true"
    )
    failed, counts = await api_counts(tab, w.key, w.viewed, "MONTH", ["failed"])
    assert 0 < failed < w.related
    assert await shown_bars(tab) == every_bucket(counts, "MONTH")


async def test_the_grouping_is_reached_by_keyboard_and_a_bar_has_its_count_as_a_tooltip(
    engine: AsyncEngine, tab: Tab
) -> None:
    w = await recurring_world(engine)
    await tab.sign_in(w.key, f"{CONSOLE}?sessionId={w.viewed}&similar=open")
    weekly = tab.page.get_by_role("button", name="By week")
    await weekly.focus()
    await tab.page.keyboard.press("Tab")
    monthly = tab.page.get_by_role("button", name="By month")
    await expect(monthly).to_be_focused()
    await tab.page.keyboard.press("Enter")
    await expect(monthly).to_have_attribute("aria-pressed", "true")
    await expect(monthly).to_be_focused()
    first = tab.page.locator(".timeline-bars .bar").first
    await expect(first).to_have_attribute("title", "January 2026: 5 sessions")
    await expect(tab.page.locator(".timeline-bars")).to_have_attribute("aria-hidden", "true")
    await expect(tab.page.locator(".timeline table caption")).to_have_text(
        "Sessions that went like this one, by month (months with none left out)"
    )


async def test_a_probe_that_reached_the_bound_is_said(engine: AsyncEngine, tab: Tab) -> None:
    w = await recurring_world(engine, repeats=12)  # 252 related passages: past the 200
    await tab.sign_in(w.key, f"{CONSOLE}?sessionId={w.viewed}")
    await open_panel(tab)
    note = tab.page.locator(".timeline-note")
    await expect(note).to_contain_text("200 nearest passages of each probe")
    await expect(note).to_contain_text("more sessions may match than were counted")
    # Counted is what the API counted, bound and all.
    total, counts = await api_counts(tab, w.key, w.viewed, "WEEK")
    assert await shown_bars(tab) == every_bucket(counts, "WEEK")
    await expect(tab.page.locator(".timeline-summary")).to_contain_text(f"{total} sessions")


async def test_no_timeline_note_when_nothing_was_bounded(engine: AsyncEngine, tab: Tab) -> None:
    w = await recurring_world(engine)
    await tab.sign_in(w.key, f"{CONSOLE}?sessionId={w.viewed}")
    await open_panel(tab)
    await expect(tab.page.locator(".timeline-summary")).to_be_visible()
    await expect(tab.page.locator(".timeline-note")).to_have_count(0)


async def test_the_next_page_of_neighbours_does_not_ask_the_timeline_again(
    engine: AsyncEngine, tab: Tab
) -> None:
    w = await recurring_world(engine)
    await tab.sign_in(w.key, f"{CONSOLE}?sessionId={w.viewed}&similar=open")
    await expect(tab.page.locator(".neighbour")).to_have_count(5)
    bars = await shown_bars(tab)
    before = len(tab.graphql)
    await tab.page.get_by_role("button", name="Show more similar sessions").click()
    await expect(tab.page.locator(".neighbour")).to_have_count(w.related)
    [more] = tab.graphql[before:]
    assert "ConsoleMoreSimilarSessions" in tab.document(more)
    assert "timeline" not in tab.document(more)
    assert await shown_bars(tab) == bars


async def test_a_count_that_ran_out_of_time_says_so_and_not_that_nothing_matched(
    engine: AsyncEngine, tab: Tab
) -> None:
    w = await recurring_world(engine)

    async def time_out_the_count(route: Route) -> None:
        response = await route.fetch()
        body = await response.json()
        similar = (body["data"]["runtimeSession"] or {}).get("similarSessions")
        if similar and "timeline" in similar:
            # What the API answers when the count runs past its budget.
            similar["timeline"].update(
                sessions=0,
                buckets=[],
                degraded={"reasons": ["SIMILAR_COMPARISON_TIMED_OUT"], "detail": TIMED_OUT},
            )
        await route.fulfill(response=response, json=body)

    await tab.sign_in(w.key)
    await tab.page.route("**/graphql", time_out_the_count)
    await tab.open(f"{CONSOLE}?sessionId={w.viewed}&similar=open")
    await expect(tab.page.locator(".neighbour")).to_have_count(5)
    await expect(tab.page.locator(".timeline-note")).to_have_text(TIMED_OUT)
    await expect(tab.page.locator(".timeline .empty")).to_have_count(0)
    await expect(tab.page.locator(".timeline-bars")).to_have_count(0)


SPEND_ONE = "similarSessions { limit }"


def spending_the_budget(comparisons: int) -> Callable[[Route], Awaitable[None]]:
    """A route that adds, before the session, a field costing `comparisons` of the request's 50
    to the console's first request for neighbours: the server then refuses what no longer fits
    (its own answer: the refused field null, with its error)."""
    spent: list[str] = []
    spender = f"spent: runtimeSessions(first: {comparisons}) {{ nodes {{ {SPEND_ONE} }} }}"

    async def spend(route: Route) -> None:
        body = json.loads(route.request.post_data or "{}")
        query = str(body.get("query", ""))
        if spent or "similarSessions(" not in query or "ConsoleMore" in query:
            await route.continue_()
            return
        spent.append(query)
        body["query"] = query.replace("runtimeSession(id:", f"{spender}\n  runtimeSession(id:", 1)
        await route.continue_(post_data=json.dumps(body))

    return spend


@pytest.mark.parametrize("landing", ["with the page", "when the panel opens"])
async def test_a_refused_count_leaves_the_neighbours_and_offers_a_retry(
    engine: AsyncEngine, tab: Tab, landing: str
) -> None:
    w = await recurring_world(engine)
    await tab.sign_in(w.key)
    await tab.page.route("**/graphql", spending_the_budget(49))  # the neighbours fit, not the count
    before = len(tab.graphql)
    if landing == "with the page":
        await tab.open(f"{CONSOLE}?sessionId={w.viewed}&similar=open")
    else:
        await tab.open(f"{CONSOLE}?sessionId={w.viewed}")
        await open_panel(tab)
    await expect(tab.page.locator(".neighbour")).to_have_count(5)
    problem = tab.page.locator(".timeline [role=alert]")
    await expect(problem.locator("p")).to_have_text(
        "The timeline could not be counted. The request asked for more than the server allows "
        "(runtimeSession.similarSessions.timeline: refused, as it could run more comparisons "
        "than the request has left (failureModes takes all of them); at most 50 per request "
        "(MAX_SIMILAR_PER_REQUEST))."
    )
    await expect(tab.page.locator(".timeline-bars")).to_have_count(0)
    await problem.get_by_role("button", name="Retry").click()
    await expect(tab.page.locator(".timeline-bars")).to_be_visible()
    await expect(tab.page.locator(".timeline [role=alert]")).to_have_count(0)
    await expect(tab.page.locator(".neighbour")).to_have_count(5)
    await expect(tab.page.locator(".neighbour-title").first).to_be_focused()
    total, counts = await api_counts(tab, w.key, w.viewed, "WEEK")
    assert total == w.related
    assert await shown_bars(tab) == every_bucket(counts, "WEEK")
    names = [tab.document(r).split("(")[0].split()[-1] for r in tab.graphql[before:]]
    first = "ConsoleSessionWithSimilar" if landing == "with the page" else "ConsoleSession"
    assert names[0] == first and names[-1] == "ConsoleSimilarSessions"
    assert len(names) == (2 if landing == "with the page" else 3)


async def test_refused_neighbours_leave_the_page_and_say_why(engine: AsyncEngine, tab: Tab) -> None:
    w = await recurring_world(engine)
    await tab.sign_in(w.key)
    await tab.page.route("**/graphql", spending_the_budget(50))  # nothing more fits
    await tab.open(f"{CONSOLE}?sessionId={w.viewed}&similar=open")
    await expect(tab.page.get_by_role("heading", level=1)).to_have_text("The failure")
    problem = tab.page.locator("#similar-body [role=alert]")
    await expect(problem).to_contain_text(
        "Similar sessions could not be loaded. The request asked for more than the server "
        "allows (runtimeSession.similarSessions: refused, as it could run more comparisons "
        "than the request has left (failureModes takes all of them); at most 50 per request "
        "(MAX_SIMILAR_PER_REQUEST))."
    )
    await expect(tab.page.locator(".timeline")).to_have_count(0)
    await problem.get_by_role("button", name="Retry").click()
    await expect(tab.page.locator(".neighbour")).to_have_count(5)
    await expect(tab.page.locator(".timeline-bars")).to_be_visible()


# Sessions at both ends of the range the contract allows, and in years 2 and 99 (issue #30).
LONG_SPAN = [
    "0001-01-01T00:00:00+00:00",
    "0002-03-04T05:06:07+00:00",
    "0099-12-31T12:00:00+00:00",
    "2026-01-05T09:00:00+00:00",
    "9999-12-31T23:59:59.999999+00:00",
]
MAX_FILLED_BARS = 1_000  # timeline.js: past this many buckets only the counted ones are drawn


async def long_span_world(engine: AsyncEngine) -> tuple[str, str]:
    """A viewed session and one look-alike started at each of LONG_SPAN: (key, viewed)."""
    world = World()
    account, key = world.account()
    topic = direction(3)
    viewed = world.session(account, "The failure", day=90)
    world.chunk(viewed, blend(topic, direction(10), 0.1))
    for n, started in enumerate(LONG_SPAN):
        again = world.session(account, f"Again {n}")
        world.lines[-1].update(started_at=started, last_activity_at=started)
        world.chunk(again, blend(topic, direction(100 + n), 0.2))
    await world.write(engine)
    return key, viewed


async def test_a_span_from_year_1_to_9999_draws_the_counted_buckets_each_labelled_by_its_year(
    engine: AsyncEngine, tab: Tab
) -> None:
    key, viewed = await long_span_world(engine)
    await tab.sign_in(key, f"{CONSOLE}?sessionId={viewed}&similar=open")
    await expect(tab.page.get_by_role("button", name="By month")).to_have_attribute(
        "aria-pressed", "true"
    )
    gaps = tab.page.locator(".timeline-gaps")
    ends = {  # the first and last bucket's labels, as the axis shows them
        "MONTH": ("January 0001", "December 9999"),
        "DAY": ("Jan 1, 0001", "Dec 31, 9999"),
        "WEEK": ("week of Jan 1, 0001", "week of Dec 27, 9999"),
    }
    for bucket, labels in ends.items():
        # Every day from year 1 to 9999 is 3.65 million bars: only the counted ones are drawn.
        await tab.page.get_by_role("button", name=f"By {bucket.lower()}").click()
        total, counts = await api_counts(tab, key, viewed, bucket)
        assert total == len(LONG_SPAN)
        assert await shown_bars(tab) == sorted(counts.items())
        assert len(counts) <= MAX_FILLED_BARS
        await expect(tab.page.locator(".timeline-axis span")).to_have_text(list(labels))
        bars = tab.page.locator(".timeline-bars .bar")
        for bar, label in ((bars.first, labels[0]), (bars.last, labels[1])):
            title = f"{label[0].upper()}{label[1:]}: 1 session"
            await expect(bar).to_have_attribute("title", title)
        drawn = f"Only the {len(counts)} {bucket.lower()}s with sessions are drawn"
        await expect(gaps).to_contain_text(drawn)
    titles = await tab.page.locator(".timeline-bars .bar").evaluate_all(
        "(bars) => bars.map((b) => b.title)"
    )
    assert titles[1:3] == ["Week of Mar 4, 0002: 1 session", "Week of Dec 28, 0099: 1 session"]
    assert not any(" 19" in t for t in titles), "years 1 to 99 are not the 1900s"
    assert await tab.axe_violations() == []
