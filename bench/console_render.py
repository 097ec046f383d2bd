"""Benchmark the console's rendering of hostile content in Chromium (issue #30): Markdown turns
a quadratic parser spends seconds on, and timelines from year 1 to 9999, each at a revision
before and at the working tree, timed by the page's own clock (performance.now()).

    python -m bench.console_render [--before REV] [--runs N]

Each static file is served to the page from git (`REV`) or from the working tree, on an origin
of its own; a figure is the median of the runs, in ms, layout included."""

from __future__ import annotations

import argparse
import asyncio
import statistics
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

from playwright.async_api import Browser, Page, Route, async_playwright

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage"]
STATIC = "similar_sessions/console/static"
ROOT = Path(__file__).resolve().parents[1]
BEFORE = "f944a6f"  # main before issue #30's console items: the hand-written renderer
BLANK = b"<!doctype html><html lang=en><title>bench</title><body></body></html>"

BRACKETS = "[" * 24_999 + "]" * 24_999
PLAIN = ("Some **bold** words and a `code` span. " * 1_300)[:49_998]
PLAIN_CASE = "a plain turn of 49,998 characters"
ORDINARY = (
    "Here is **your booking**, with `ZFA04Y` as its code.\n\n1. HAT136 *New York* to Seattle\n"
    "2. back\n\nSee [the policy](https://example.com/policy)."
)
MARKDOWN_CASES: dict[str, tuple[list[str], bool]] = {
    # name: (the turns of one render, whether it runs once only: it takes a minute before)
    "24,999 `[` then 24,999 `]`": ([BRACKETS], False),
    "12,499 `[` then 12,499 `]` (half)": (["[" * 12_499 + "]" * 12_499], False),
    "table header, `-`, 49,000 spaces, `x`": (["| a | b |\n-" + " " * 49_000 + "x"], False),
    "24,999 `![` (markdown-it's slowest found)": (["![" * 24_999], False),
    PLAIN_CASE: ([PLAIN], False),
    "100 ordinary short turns": ([ORDINARY] * 100, False),
    "a session of 24 turns of brackets": ([BRACKETS] * 24, True),
}
TIMELINE_CASES = {
    # name: the days with sessions (the API's buckets by day)
    "sessions from year 2 to 9999": ["0002-01-01", "0050-06-15", "1999-12-31", "9999-12-31"],
    "0001-01-01 and 9999-12-31": ["0001-01-01", "2026-01-05", "9999-12-31"],
}

RENDER_MARKDOWN = """async ({texts, runs}) => {
  const { markdown } = await import('/static/markdown.js');
  const times = [];
  for (let r = 0; r < runs; r += 1) {
    const host = document.createElement('div');
    document.body.append(host);
    const t0 = performance.now();
    for (const text of texts) host.append(markdown(text));
    void host.offsetHeight; // layout too: the tab waits for it
    times.push(performance.now() - t0);
    host.remove();
  }
  return times;
}"""
RENDER_TIMELINE = """async ({timeline}) => {
  const { timelineView } = await import('/static/timeline.js');
  const errors = [];
  const onError = (event) => { errors.push(event.message); event.preventDefault(); };
  window.addEventListener('error', onError);
  const t0 = performance.now();
  const section = timelineView(timeline, {});
  document.body.append(section);
  void section.offsetHeight;
  const opened = { ms: performance.now() - t0, bars: section.querySelectorAll('.bar').length };
  const t1 = performance.now();
  section.querySelector('[data-grouping=day]').click();
  void section.offsetHeight;
  const byDay = { ms: performance.now() - t1, bars: section.querySelectorAll('.bar').length };
  window.removeEventListener('error', onError);
  section.remove();
  return { opened, byDay, errors };
}"""


def reader(revision: str | None) -> Callable[[str], bytes | None]:
    """A static file's bytes at `revision` (None: the working tree), or None when it has none."""

    def read(name: str) -> bytes | None:
        if revision is None:
            path = ROOT / STATIC / name
            return path.read_bytes() if path.is_file() else None
        shown = subprocess.run(
            ["git", "show", f"{revision}:{STATIC}/{name}"], cwd=ROOT, capture_output=True
        )
        return shown.stdout if shown.returncode == 0 else None

    return read


async def page_serving(browser: Browser, read: Callable[[str], bytes | None]) -> Page:
    """A blank page whose /static/ is served by `read`."""
    page = await browser.new_page()

    async def serve(route: Route) -> None:
        path = route.request.url.split("://", 1)[1].split("/", 1)[1].split("?")[0]
        if not path.startswith("static/"):
            await route.fulfill(body=BLANK, content_type="text/html")
            return
        body = read(path.removeprefix("static/"))
        if body is None:
            await route.fulfill(status=404, body=b"")
        else:
            kind = "text/css" if path.endswith(".css") else "text/javascript"
            await route.fulfill(body=body, content_type=kind)

    await page.route("http://console.bench/**", serve)
    await page.goto("http://console.bench/")
    return page


def timeline_of(days: list[str]) -> dict[str, Any]:
    """The API's timeline by day with one session on each of `days`."""
    buckets = [{"start": f"{day}T00:00:00+00:00", "sessions": 1} for day in days]
    degraded: dict[str, Any] = {"reasons": [], "detail": None}
    return {"sessions": len(days), "bucket": "DAY", "buckets": buckets, "degraded": degraded}


async def markdown_times(page: Page, runs: int) -> dict[str, float]:
    """Each Markdown case's median render, in ms."""
    times = {}
    for name, (texts, once) in MARKDOWN_CASES.items():
        await page.evaluate(RENDER_MARKDOWN, {"texts": texts[:1], "runs": 1})  # warmed up
        found = await page.evaluate(RENDER_MARKDOWN, {"texts": texts, "runs": 1 if once else runs})
        times[name] = statistics.median(found)
    return times


def timeline_figure(shown: dict[str, Any]) -> str:
    return f"{shown['ms']:,.0f} ms, {shown['bars']:,} bars"


async def timeline_figures(page: Page) -> dict[str, str]:
    """Each timeline case: its first draw, then By day (or the error it threw)."""
    figures = {}
    for name, days in TIMELINE_CASES.items():
        found = await page.evaluate(RENDER_TIMELINE, {"timeline": timeline_of(days)})
        figures[f"timeline, {name}: opened"] = timeline_figure(found["opened"])
        day = "; ".join(found["errors"]) or timeline_figure(found["byDay"])
        figures[f"timeline, {name}: By day"] = day
    return figures


async def measure(revision: str | None, runs: int) -> tuple[dict[str, float], dict[str, str]]:
    async with async_playwright() as playwright:
        browser = await playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            page = await page_serving(browser, reader(revision))
            return await markdown_times(page, runs), await timeline_figures(page)
        finally:
            await browser.close()


async def main(before: str, runs: int) -> None:
    old_markdown, old_timeline = await measure(before, runs)
    new_markdown, new_timeline = await measure(None, runs)
    print(f"## Console rendering in Chromium: {before} against the working tree")
    print()
    print(f"Median of {runs} runs (one for the session of 24 turns), ms, layout included;")
    print("÷ plain: against the plain turn of the same length, as the browser test bounds it (4).")
    print()
    print(f"| Markdown | {before} | ÷ plain | now | ÷ plain | {before} ÷ now |")
    print("|---|---:|---:|---:|---:|---:|")
    old_plain, new_plain = old_markdown[PLAIN_CASE], new_markdown[PLAIN_CASE]
    for name, old in old_markdown.items():
        new = new_markdown[name]
        print(
            f"| {name} | {old:,.1f} | {old / old_plain:,.1f} | {new:,.1f} | {new / new_plain:,.1f} "
            f"| {old / new:,.1f}x |"
        )
    print()
    print(f"| timeline | {before} | now |")
    print("|---|---|---|")
    for name, old_figure in old_timeline.items():
        print(f"| {name} | {old_figure} | {new_timeline[name]} |")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--before", default=BEFORE, help="the revision to compare with")
    parser.add_argument("--runs", type=int, default=5, help="runs per case (median)")
    arguments = parser.parse_args()
    asyncio.run(main(arguments.before, arguments.runs))
