// How often this has happened: the timeline that comes with the neighbours, drawn as a small
// bar chart (elements built one by one) with, for screen readers, a table of the same counts.
// The API counts by day; weeks and months are those days added up here, so another grouping
// asks nothing.

import { h, plural } from "./dom.js";

const DAY_MS = 86_400_000;
export const GROUPINGS = ["day", "week", "month"];
const FITTING_BARS = 62; // the grouping shown first has at most this many bars, if one can
const BAR_REM = 2; // the widest a bar gets
const SPACED_BARS = 62; // more bars than this touch each other
const MIN_HEIGHT = 4; // percent: the smallest count stays visible
// DegradedReason names (GraphQL), not the REST codes.
const TROUBLE = ["SIMILAR_TIMELINE_BOUNDED", "SIMILAR_COMPARISON_TIMED_OUT"];

const dayFormat = new Intl.DateTimeFormat(undefined, { dateStyle: "medium", timeZone: "UTC" });
const monthFormat = new Intl.DateTimeFormat(undefined, {
  month: "long",
  year: "numeric",
  timeZone: "UTC",
});

/** The UTC start of the day, week (from Monday, as PostgreSQL's date_trunc) or month of `ms`. */
export function bucketStart(ms, grouping) {
  const d = new Date(ms);
  const day = Date.UTC(d.getUTCFullYear(), d.getUTCMonth(), d.getUTCDate());
  if (grouping === "day") return day;
  if (grouping === "week") return day - ((d.getUTCDay() + 6) % 7) * DAY_MS;
  return Date.UTC(d.getUTCFullYear(), d.getUTCMonth(), 1);
}

function following(ms, grouping) {
  if (grouping === "day") return ms + DAY_MS;
  if (grouping === "week") return ms + 7 * DAY_MS;
  const d = new Date(ms);
  return Date.UTC(d.getUTCFullYear(), d.getUTCMonth() + 1, 1);
}

/** The counts added up by `grouping`: every bucket from the first to the last, gaps as 0. */
export function series(buckets, grouping) {
  const counts = new Map();
  for (const b of buckets) {
    const start = bucketStart(Date.parse(b.start), grouping);
    counts.set(start, (counts.get(start) ?? 0) + b.sessions);
  }
  if (counts.size === 0) return [];
  const starts = [...counts.keys()];
  const last = Math.max(...starts);
  const bars = [];
  for (let t = Math.min(...starts); t <= last; t = following(t, grouping)) {
    bars.push({ start: t, sessions: counts.get(t) ?? 0 });
  }
  return bars;
}

function label(ms, grouping) {
  if (grouping === "month") return monthFormat.format(ms);
  if (grouping === "week") return `week of ${dayFormat.format(ms)}`;
  return dayFormat.format(ms);
}

function bars(series, grouping) {
  const peak = Math.max(...series.map((b) => b.sessions));
  const plot = h(
    "div",
    { class: `timeline-bars${series.length > SPACED_BARS ? " dense" : ""}`, "aria-hidden": "true" },
    series.map((b) => {
      const bar = h("span", {
        class: "bar",
        title: `${capital(label(b.start, grouping))}: ${plural(b.sessions, "session")}`,
        "data-start": new Date(b.start).toISOString(),
        "data-sessions": b.sessions,
      });
      // Heights and widths through the CSSOM: the policy forbids style attributes, not these.
      bar.style.height = b.sessions === 0 ? "0" : `${Math.max(MIN_HEIGHT, (100 * b.sessions) / peak)}%`;
      return bar;
    }),
  );
  const chart = h(
    "div",
    { class: "timeline-chart" },
    plot,
    h(
      "div",
      { class: "timeline-axis", "aria-hidden": "true" },
      h("span", {}, label(series[0].start, grouping)),
      series.length > 1 ? h("span", {}, label(series.at(-1).start, grouping)) : null,
    ),
  );
  // A few bars keep a bar's width rather than stretch across the panel.
  chart.style.width = `min(100%, ${series.length * BAR_REM}rem)`;
  return chart;
}

function capital(text) {
  return text.charAt(0).toUpperCase() + text.slice(1);
}

function table(series, grouping) {
  // Hidden by its wrapper: a table keeps its own width whatever its box says.
  return h(
    "div",
    { class: "visually-hidden" },
    h(
    "table",
    {},
    h("caption", {}, `Sessions that went like this one, by ${grouping} (${grouping}s with none left out)`),
    h("thead", {}, h("tr", {}, h("th", { scope: "col" }, capital(grouping)), h("th", { scope: "col" }, "Sessions"))),
    h(
      "tbody",
      {},
      series
        .filter((b) => b.sessions > 0)
        .map((b) => h("tr", {}, h("th", { scope: "row" }, capital(label(b.start, grouping))), h("td", {}, String(b.sessions)))),
    ),
  ),
  );
}

function timelineSection(...children) {
  return h(
    "section",
    { class: "timeline", "aria-labelledby": "timeline-title" },
    h("h3", { id: "timeline-title", class: "timeline-title" }, "How often this happened"),
    ...children,
  );
}

/** The timeline's section when its count was refused (the field is null, with an error):
 * `problem`, the sentence and its Retry, in place of the chart. */
export function timelineRefused(problem) {
  return timelineSection(problem);
}

/**
 * The timeline's section. `grouping` is the operator's choice (day, week or month; null: the
 * finest that fits), kept by the caller through `onGrouping` across the panel's re-renders.
 */
export function timelineView(timeline, { grouping = null, onGrouping } = {}) {
  const reasons = timeline.degraded.reasons;
  const trouble = TROUBLE.some((r) => reasons.includes(r)) && timeline.degraded.detail;
  const note = trouble
    ? h("div", { class: "degraded timeline-note", role: "note" }, h("p", {}, timeline.degraded.detail))
    : null;
  const section = timelineSection();
  if (timeline.sessions === 0) {
    if (!reasons.includes("SIMILAR_COMPARISON_TIMED_OUT")) {
      section.append(h("p", { class: "empty" }, "No other session went like this one at “related” or closer."));
    }
    if (note) section.append(note);
    return section;
  }
  // Groupings at least as coarse as what was counted.
  const offered = GROUPINGS.slice(Math.max(0, GROUPINGS.indexOf(timeline.bucket.toLowerCase())));
  let shown = offered.includes(grouping)
    ? grouping
    : (offered.find((g) => series(timeline.buckets, g).length <= FITTING_BARS) ?? offered.at(-1));
  const summary = h("p", { class: "timeline-summary" });
  const picture = h("div", { class: "timeline-picture" });
  const buttons = offered.map((g) =>
    h(
      "button",
      {
        type: "button",
        class: "button-quiet timeline-grouping-choice",
        "data-grouping": g,
        onclick: () => {
          shown = g;
          onGrouping?.(g);
          draw();
        },
      },
      `By ${g}`,
    ),
  );

  function draw() {
    const counted = series(timeline.buckets, shown);
    const peak = Math.max(...counted.map((b) => b.sessions));
    summary.textContent =
      `${plural(timeline.sessions, "session")} went like this one (related or closer); ` +
      `most in one ${shown}: ${peak}.`;
    for (const button of buttons) {
      button.setAttribute("aria-pressed", String(button.dataset.grouping === shown));
    }
    picture.replaceChildren(bars(counted, shown), table(counted, shown));
  }

  draw();
  section.append(
    summary,
    offered.length > 1
      ? h("div", { class: "timeline-grouping", role: "group", "aria-label": "Count by" }, buttons)
      : null,
    picture,
  );
  if (note) section.append(note);
  return section;
}
