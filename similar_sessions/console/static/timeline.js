// How often this has happened: the timeline that comes with the neighbours, drawn as a small
// bar chart (elements built one by one) with, for screen readers, a table of the same counts.
// The API counts by day; weeks and months are those days added up here, so another grouping
// asks nothing. Empty buckets between the counted ones are drawn up to MAX_FILLED_BARS; past
// that (sessions from year 1 to 9999 span 3.65 million days) only the counted ones are, so the
// work follows the API's answer, never the span.

import { h, plural } from "./dom.js";

const DAY_MS = 86_400_000;
export const GROUPINGS = ["day", "week", "month"];
const FITTING_BARS = 62; // the grouping shown first has at most this many bars, if one can
const BAR_REM = 2; // the widest a bar gets
const SPACED_BARS = 62; // more bars than this touch each other
const MIN_HEIGHT = 4; // percent: the smallest count stays visible
export const MAX_FILLED_BARS = 1_000; // the most buckets drawn with the empty ones among them
// DegradedReason names (GraphQL), not the REST codes.
const TROUBLE = ["SIMILAR_TIMELINE_BOUNDED", "SIMILAR_COMPARISON_TIMED_OUT"];

const dayFormat = new Intl.DateTimeFormat(undefined, { dateStyle: "medium", timeZone: "UTC" });
const monthFormat = new Intl.DateTimeFormat(undefined, {
  month: "long",
  year: "numeric",
  timeZone: "UTC",
});

/** The UTC midnight of a day: years 0 to 99 as themselves (Date.UTC takes them for 1900-1999). */
function utc(year, month, day) {
  const at = new Date(0);
  at.setUTCFullYear(year, month, day);
  return at.getTime();
}

/** The UTC start of the day, week (from Monday, as PostgreSQL's date_trunc) or month of `ms`. */
export function bucketStart(ms, grouping) {
  const d = new Date(ms);
  const day = utc(d.getUTCFullYear(), d.getUTCMonth(), d.getUTCDate());
  if (grouping === "day") return day;
  if (grouping === "week") return day - ((d.getUTCDay() + 6) % 7) * DAY_MS;
  return utc(d.getUTCFullYear(), d.getUTCMonth(), 1);
}

function following(ms, grouping) {
  if (grouping === "day") return ms + DAY_MS;
  if (grouping === "week") return ms + 7 * DAY_MS;
  const d = new Date(ms);
  return utc(d.getUTCFullYear(), d.getUTCMonth() + 1, 1);
}

/** How many buckets of `grouping` run from the one starting at `first` to the one at `last`. */
function bucketsBetween(first, last, grouping) {
  if (grouping !== "month") return Math.round((last - first) / (grouping === "week" ? 7 * DAY_MS : DAY_MS)) + 1;
  const a = new Date(first);
  const b = new Date(last);
  return (b.getUTCFullYear() - a.getUTCFullYear()) * 12 + b.getUTCMonth() - a.getUTCMonth() + 1;
}

/**
 * The counts added up by `grouping`, oldest first, as `{bars, span}`: `span` buckets run from the
 * first counted to the last; `bars` are all of them (gaps as 0) when they are at most
 * MAX_FILLED_BARS, else the counted ones only.
 */
export function series(buckets, grouping) {
  const counts = new Map();
  for (const b of buckets) {
    const start = bucketStart(Date.parse(b.start), grouping);
    counts.set(start, (counts.get(start) ?? 0) + b.sessions);
  }
  const starts = [...counts.keys()].sort((a, b) => a - b);
  if (starts.length === 0) return { bars: [], span: 0 };
  const span = bucketsBetween(starts[0], starts.at(-1), grouping);
  if (span > MAX_FILLED_BARS) return { bars: starts.map((t) => ({ start: t, sessions: counts.get(t) })), span };
  const bars = [];
  for (let t = starts[0]; t <= starts.at(-1); t = following(t, grouping)) {
    bars.push({ start: t, sessions: counts.get(t) ?? 0 });
  }
  return { bars, span };
}

/** `format`'s text for `ms`, its year in four digits: year 2 reads 0002, never a day's 2. */
function withFullYear(format, ms) {
  const parts = format.formatToParts(ms);
  return parts.map((p) => (p.type === "year" && /^\d{1,3}$/.test(p.value) ? p.value.padStart(4, "0") : p.value)).join("");
}

function label(ms, grouping) {
  if (grouping === "month") return withFullYear(monthFormat, ms);
  if (grouping === "week") return `week of ${withFullYear(dayFormat, ms)}`;
  return withFullYear(dayFormat, ms);
}

function mostInOne(series) {
  return series.reduce((most, b) => Math.max(most, b.sessions), 0);
}

function bars(series, grouping) {
  const peak = mostInOne(series);
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

/** When the empty buckets were not drawn, a sentence saying so; else null. */
function gapsLeftOut(series, span, grouping) {
  if (series.length === span) return null;
  return h(
    "p",
    { class: "timeline-gaps" },
    `Only the ${plural(series.length, grouping)} with sessions are drawn, side by side: ` +
      `${plural(span, grouping)} run from ${label(series[0].start, grouping)} to ` +
      `${label(series.at(-1).start, grouping)}.`,
  );
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
    : (offered.find((g) => series(timeline.buckets, g).span <= FITTING_BARS) ?? offered.at(-1));
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
    const { bars: counted, span } = series(timeline.buckets, shown);
    summary.textContent =
      `${plural(timeline.sessions, "session")} went like this one (related or closer); ` +
      `most in one ${shown}: ${mostInOne(counted)}.`;
    for (const button of buttons) {
      button.setAttribute("aria-pressed", String(button.dataset.grouping === shown));
    }
    // replaceChildren writes a null as the text "null": only the parts there are.
    const parts = [bars(counted, shown), gapsLeftOut(counted, span, shown), table(counted, shown)];
    picture.replaceChildren(...parts.filter(Boolean));
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
