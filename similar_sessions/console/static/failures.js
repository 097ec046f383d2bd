// The "Failure modes" page: a window's sessions of one status grouped by how they went, as
// cards (new or recurring, since when, a small daily bar chart, the top shared terms, the
// representative's title); its window, status and page live in the address, so Back and
// reload restore them. And, on a session opened from a card, its group's other members.

import { RequestFailed, Unauthorized, graphql } from "./api.js";
import { h, plural, sessionHref, time } from "./dom.js";
import { statusFilter } from "./filter.js";
import { FAILURE_GROUP, FAILURE_MODES, FAILURE_WINDOWS } from "./queries.js";
import { status as statusBadge } from "./sessions.js";

const PAGE = "/console/runtime-sessions";
const ALERTS_PAGE = `${PAGE}?alerts`;
const WINDOW_PARAM = "failureModes";
const STATUS_PARAM = "failureStatus";
const AS_OF_PARAM = "failureAsOf"; // the grouping a card was shown from (its answer's asOf)
const DEFAULT_WINDOW = 7;
const DEFAULT_STATUS = "failed";
const DAY_MS = 86_400_000;
const MIN_HEIGHT = 8; // percent: a day with one session stays visible

const dayFormat = new Intl.DateTimeFormat(undefined, { dateStyle: "medium", timeZone: "UTC" });

/** Whether the address asks for the failure modes page. */
export function wantsFailureModes(params) {
  return params.has(WINDOW_PARAM) && !params.has("sessionId");
}

/** The page's window (1, 7 or 30 days) and status (null: any status) from the address. */
export function failureChoice(params) {
  const days = Number.parseInt(params.get(WINDOW_PARAM) ?? "", 10);
  const status = params.get(STATUS_PARAM);
  return {
    days: FAILURE_WINDOWS.includes(days) ? days : DEFAULT_WINDOW,
    status: status === null ? DEFAULT_STATUS : status.trim() || null,
  };
}

/** The address of the failure modes page for a window, a status (null: any) and a page. */
export function failureHref({ days = DEFAULT_WINDOW, status = DEFAULT_STATUS, after = null } = {}) {
  const params = new URLSearchParams({ [WINDOW_PARAM]: String(days) });
  if (status !== DEFAULT_STATUS) params.set(STATUS_PARAM, status ?? "");
  if (after) params.set("after", after);
  return `${PAGE}?${params}`;
}

/**
 * A card's link: the representative, its panel open (filtered by the status), and the group,
 * of the grouping the card was shown from (`asOf`).
 */
function representativeHref(sessionId, { days, status }, asOf) {
  const params = new URLSearchParams({ sessionId, similar: "open", [WINDOW_PARAM]: String(days) });
  if (status) params.set("similarStatus", status);
  params.set(STATUS_PARAM, status ?? "");
  if (asOf) params.set(AS_OF_PARAM, asOf);
  return `${PAGE}?${params}`;
}

function statusWords(status) {
  return status ? `with status “${status}”` : "of any status";
}

function windowWords(days) {
  return days === 1 ? "the last day" : `the last ${days} days`;
}

/** The page's data: [viewer, failureModes]; throws as graphql() does. */
export async function fetchFailureModes(key, { days, status }, after) {
  const data = await graphql(
    FAILURE_MODES,
    { windowDays: days, status: status ? [status] : null, after },
    key,
  );
  return [data.viewer, data.failureModes];
}

function windowPicker(choice) {
  const links = FAILURE_WINDOWS.map((days) =>
    h(
      "a",
      {
        class: "window-choice",
        href: failureHref({ days, status: choice.status }),
        "aria-current": days === choice.days ? "page" : null,
      },
      days === 1 ? "Last day" : `Last ${days} days`,
    ),
  );
  return h("nav", { class: "window-picker", "aria-label": "Window" }, links);
}

function statusChooser(choice, answer) {
  const chooser = statusFilter({
    id: "failure",
    label: "Sessions' status",
    name: "Filter the sessions grouped",
    onApply: (status) => window.location.assign(failureHref({ days: choice.days, status })),
  });
  const seen = new Set([DEFAULT_STATUS, ...answer.groups.map((g) => g.representative.status)]);
  if (choice.status) seen.add(choice.status);
  chooser.offer([...seen].sort(), choice.status);
  return chooser.element;
}

/** The days of the window, oldest first, each with its members' count (0 for none). */
export function dailyBars(daily, windowStart) {
  const counts = new Map(daily.map((d) => [Date.parse(d.start), d.sessions]));
  const start = new Date(windowStart);
  let day = Date.UTC(start.getUTCFullYear(), start.getUTCMonth(), start.getUTCDate());
  const last = Math.max(Date.now(), ...counts.keys());
  const bars = [];
  for (; day <= last; day += DAY_MS) bars.push({ start: day, sessions: counts.get(day) ?? 0 });
  return bars;
}

function miniChart(daily, windowStart) {
  const bars = dailyBars(daily, windowStart);
  const peak = Math.max(1, ...bars.map((b) => b.sessions));
  const plot = h(
    "div",
    { class: "mini-chart", "aria-hidden": "true" },
    bars.map((b) => {
      const bar = h("span", {
        class: "bar",
        title: `${dayFormat.format(b.start)}: ${plural(b.sessions, "session")}`,
        "data-start": new Date(b.start).toISOString(),
        "data-sessions": b.sessions,
      });
      // Heights through the CSSOM: the policy forbids style attributes, not these.
      bar.style.height = b.sessions === 0 ? "0" : `${Math.max(MIN_HEIGHT, (100 * b.sessions) / peak)}%`;
      return bar;
    }),
  );
  const told = daily.map((d) => `${dayFormat.format(Date.parse(d.start))}: ${d.sessions}`).join("; ");
  return [plot, h("p", { class: "visually-hidden" }, `Sessions by day: ${told}.`)];
}

function terms(list, lead) {
  if (!list || list.length === 0) return null;
  return h(
    "div",
    { class: "card-terms" },
    h("span", { class: "terms-lead" }, lead),
    h("ul", { class: "terms" }, list.map((t) => h("li", {}, t))),
  );
}

function mode(group) {
  return group.isNew
    ? h("span", { class: "mode mode-new" }, "New")
    : h("span", { class: "mode mode-recurring" }, "Recurring");
}

/** A group's size, readable beside hundreds: its count and its share of the sessions
 * grouped; and a bar as long as its share of the page's largest group. */
function size(group, answer) {
  const share = answer.compared ? (100 * group.size) / answer.compared : 0;
  const shown = share >= 10 || share === 0 ? share.toFixed(0) : share.toFixed(1);
  return [
    h("span", { class: "card-size" }, plural(group.size, "session")),
    h("span", { class: "card-share" }, ` (${shown}% of ${answer.compared.toLocaleString()})`),
  ];
}

function sizeBar(group, largest) {
  const bar = h("span", { class: "size-bar" });
  bar.style.width = `${Math.max(2, (100 * group.size) / Math.max(1, largest))}%`;
  return h("span", { class: "size-track", "aria-hidden": "true" }, bar);
}

function card(group, choice, answer, largest) {
  const rep = group.representative;
  return h(
    "li",
    { class: "failure-card" },
    h(
      "h2",
      { class: "card-title" },
      h("a", { href: representativeHref(rep.id, choice, answer.asOf) }, rep.title || "Untitled session"),
    ),
    h(
      "p",
      { class: "card-facts" },
      mode(group),
      " ",
      ...size(group, answer),
      " · since ",
      time(group.since),
    ),
    sizeBar(group, largest),
    miniChart(group.daily, answer.windowStart),
    terms(group.sharedTerms, "Shared terms:"),
    group.alertedAt
      ? h("p", { class: "meta alerted" }, "Alerted ", time(group.alertedAt), " (", h("a", { href: ALERTS_PAGE }, "alerts"), ")")
      : null,
    group.seenBefore
      ? h(
          "p",
          { class: "meta" },
          "Seen before the window: ",
          h("a", { href: sessionHref(group.seenBefore.id) }, group.seenBefore.title || "Untitled session"),
          ", ",
          time(group.seenBefore.startedAt),
        )
      : null,
  );
}

function summary(answer, choice) {
  const which = `${statusWords(choice.status)} that started in ${windowWords(choice.days)}`;
  if (answer.sessions === 0) return h("p", { class: "empty" }, `No session ${which}.`);
  return h(
    "p",
    { class: "lede" },
    `${plural(answer.sessions, "session")} ${which}: ${plural(answer.groupCount, "group")}, ` +
      "new ones first, then the largest. A card opens its most connected session.",
  );
}

function pager(answer, choice, after) {
  const links = [
    after ? h("a", { href: failureHref(choice) }, "First groups") : null,
    answer.hasNextPage && answer.endCursor
      ? h("a", { href: failureHref({ ...choice, after: answer.endCursor }), rel: "next" }, "More groups")
      : null,
  ];
  return links.some(Boolean) ? h("nav", { class: "pager", "aria-label": "Pages of groups" }, links) : null;
}

/** The page's children for the answer of `fetchFailureModes`. */
export function renderFailureModes(answer, choice, after) {
  const largest = Math.max(1, ...answer.groups.map((g) => g.size));
  return [
    h("h1", { tabindex: "-1" }, "Failure modes"),
    h(
      "div",
      { class: "failure-controls" },
      windowPicker(choice),
      statusChooser(choice, answer),
    ),
    answer.degraded.detail
      ? h("div", { class: "degraded", role: "note" }, h("p", {}, answer.degraded.detail))
      : null,
    summary(answer, choice),
    answer.groups.length
      ? h("ol", { class: "failure-cards" }, answer.groups.map((g) => card(g, choice, answer, largest)))
      : null,
    pager(answer, choice, after),
  ].filter(Boolean);
}

/** Whether the session page was opened from a card: the group to list (and the grouping it
 * was shown from), else null. */
export function groupAsked(params) {
  if (!params.has(WINDOW_PARAM) || !params.has("sessionId")) return null;
  return { ...failureChoice(params), asOf: params.get(AS_OF_PARAM) };
}

function memberItem(m) {
  return h(
    "li",
    { class: "member" },
    h("a", { class: "member-title", href: m.consoleLink || sessionHref(m.runtimeSessionId) }, m.title || "Untitled session"),
    " ",
    statusBadge(m.status),
    h(
      "p",
      { class: "meta" },
      "Started ",
      time(m.startedAt),
      ` · tied to ${plural(m.relatedInGroup, "other member")}`,
      m.match?.sharedTerms?.length ? ` · shares ${m.match.sharedTerms.join(", ")}` : "",
    ),
  );
}

/**
 * The section listing the other members of `sessionId`'s group (window and status from the
 * card); it asks for them at once, beside the page's own request, and pages on request.
 */
export function failureGroupSection(sessionId, choice, { onUnauthorized } = {}) {
  const body = h("div", { class: "group-body", "aria-busy": "true" }, h("p", { class: "loading" }, "Looking for its failure group…"));
  const list = h("ul", { class: "members" });
  const section = h(
    "section",
    { class: "failure-group", "aria-labelledby": "failure-group-title" },
    h("h2", { id: "failure-group-title" }, "Its failure group"),
    body,
  );

  async function page(after) {
    const data = await graphql(FAILURE_GROUP, {
      windowDays: choice.days,
      status: choice.status ? [choice.status] : null,
      id: sessionId,
      after,
      asOf: choice.asOf ?? null,
    });
    if (data.failureModes?.asOf) choice = { ...choice, asOf: data.failureModes.asOf };
    return data.failureModes;
  }

  function more(members) {
    if (!members.hasNextPage || !members.endCursor) return null;
    const button = h("button", { type: "button", class: "button-quiet" }, "Show more members");
    button.addEventListener("click", async () => {
      button.disabled = true;
      button.textContent = "Loading…";
      try {
        const [next] = (await page(members.endCursor)).groups;
        list.append(...others(next.members.nodes));
        const nextButton = more(next.members);
        if (nextButton) button.replaceWith(nextButton);
        else button.remove();
      } catch (error) {
        if (error instanceof Unauthorized) onUnauthorized?.();
        button.disabled = false;
        button.textContent = "Show more members";
      }
    });
    return button;
  }

  function others(nodes) {
    return nodes.filter((m) => m.runtimeSessionId !== sessionId).map(memberItem);
  }

  function show(answer) {
    const [group] = answer.groups;
    const where = `${statusWords(choice.status)} in ${windowWords(choice.days)}`;
    if (!group) {
      body.replaceChildren(h("p", { class: "empty" }, `This session is in no failure group of the sessions ${where}.`));
      return;
    }
    list.replaceChildren(...others(group.members.nodes));
    const parts = [
      h(
        "p",
        { class: "card-facts" },
        mode(group),
        ` ${plural(group.size, "session")} ${where}, since `,
        time(group.since),
        ". ",
        h("a", { href: failureHref(choice) }, "All failure modes"),
      ),
      terms(group.sharedTerms, "Shared terms:"),
      group.size > 1 ? list : h("p", { class: "empty" }, "No other session is in its group."),
      more(group.members),
    ];
    body.replaceChildren(...parts.filter(Boolean)); // a null would be written as "null"
  }

  page(null)
    .then(show)
    .catch((error) => {
      if (error instanceof Unauthorized) {
        onUnauthorized?.();
        return;
      }
      const sentence = error instanceof RequestFailed ? error.message : "The group could not be loaded.";
      body.replaceChildren(h("div", { class: "problem", role: "alert" }, h("p", {}, `Its failure group could not be loaded. ${sentence}`)));
    })
    .finally(() => body.setAttribute("aria-busy", "false"));
  return section;
}
