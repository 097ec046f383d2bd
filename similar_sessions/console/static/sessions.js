// The sessions list (all of them, or those a search found) and one session's header.

import { h, sessionHref, time } from "./dom.js";

const RUNNING = "running";
const RUNNING_TITLE = "Running: the agent is still sending this session's activity";

/** A status as a pill; a running session's carries a live dot and says so in its tooltip. */
export function status(value) {
  const known = /^[a-z_]+$/.test(value) ? value : "other";
  const text = value.replaceAll("_", " ");
  if (value !== RUNNING) return h("span", { class: `status status-${known}`, "data-status": value }, text);
  return h(
    "span",
    { class: "status status-running is-live", "data-status": value, title: RUNNING_TITLE },
    h("span", { class: "live-dot", "aria-hidden": "true" }),
    text,
    h("span", { class: "visually-hidden" }, " (still receiving activity)"),
  );
}

function listHref(params) {
  const query = new URLSearchParams(Object.entries(params).filter(([, v]) => v));
  return `/console/runtime-sessions${query.size ? `?${query}` : ""}`;
}

function items(page) {
  return page.nodes.map((s) =>
    h(
      "li",
      { class: "session-item" },
      h("a", { class: "session-link", href: sessionHref(s.id) }, s.title || "Untitled session"),
      " ",
      status(s.status),
      h(
        "p",
        { class: "meta" },
        "Started ",
        time(s.startedAt),
        " · last activity ",
        time(s.lastActivityAt),
        " · ",
        h("code", {}, s.sourceId),
      ),
    ),
  );
}

function pager(page, { isFirstPage, search }) {
  return h(
    "nav",
    { class: "pager", "aria-label": "Pages of sessions" },
    isFirstPage ? null : h("a", { href: listHref({ q: search }) }, "Newest sessions"),
    page.hasNextPage && page.endCursor
      ? h("a", { href: listHref({ q: search, after: page.endCursor }), rel: "next" }, "Older sessions")
      : null,
  );
}

function list(page, empty) {
  const shown = items(page);
  return shown.length ? h("ul", { class: "session-list" }, shown) : h("p", { class: "empty" }, empty);
}

export function renderSessionList(page, { isFirstPage }) {
  return [
    h("h1", { tabindex: "-1" }, "Sessions"),
    h("p", { class: "lede" }, "The account's recorded agent runs, newest first."),
    list(page, isFirstPage ? "No sessions in this account yet." : "No older sessions."),
    pager(page, { isFirstPage, search: null }),
  ];
}

const HEADING_CHARS = 120; // a pasted description stays whole in the search box, not the heading

function shortened(text) {
  return text.length > HEADING_CHARS ? `${text.slice(0, HEADING_CHARS - 1).trimEnd()}…` : text;
}

/**
 * A search: the sessions whose title or source id contains the text (`page`, or null when the
 * text is too long for that search), and beside them `described`, the section of sessions
 * that went like it (null on later pages, or without the feature).
 */
export function renderSearch(page, { isFirstPage, search, described }) {
  const titles = page
    ? [
        list(
          page,
          isFirstPage ? "No session's title or source id contains this text." : "No older matches.",
        ),
        pager(page, { isFirstPage, search }),
      ]
    : [h("p", { class: "empty" }, "Titles and source ids are searched for texts of at most 200 characters.")];
  const lede = described
    ? "Sessions whose title or source id contains the text, newest first, and sessions with " +
      "passages like it. "
    : "Titles and source ids that contain the text, newest first. ";
  return [
    h("h1", { tabindex: "-1" }, `Sessions matching “${shortened(search)}”`),
    h("p", { class: "lede" }, lede, h("a", { href: listHref({}) }, "Show all sessions"), "."),
    h(
      "div",
      { class: `search-layout${described ? " with-described" : ""}` },
      h(
        "section",
        { class: "titles", "aria-labelledby": "titles-title" },
        h("h2", { id: "titles-title" }, "Title or source id contains it"),
        titles,
      ),
      described,
    ),
  ];
}

export function renderSessionHeader(session) {
  const fact = (term, ...value) => {
    const name = `fact-${term.toLowerCase().replace(" ", "-")}`; // refreshSessionHeader finds it
    return h("div", { class: name }, h("dt", {}, term), h("dd", {}, ...value));
  };
  return h(
    "header",
    { class: "session-header" },
    h("nav", { class: "crumbs", "aria-label": "Breadcrumb" },
      h("a", { href: "/console/runtime-sessions" }, "All sessions")),
    h("h1", { tabindex: "-1" }, session.title || "Untitled session"),
    h(
      "dl",
      { class: "facts" },
      fact("Status", status(session.status)),
      fact("Started", time(session.startedAt)),
      fact("Last activity", time(session.lastActivityAt)),
      session.reference ? fact("Reference", h("code", {}, session.reference)) : null,
    ),
  );
}

/** The header of a session whose status or last activity changed, redrawn in place. */
export function refreshSessionHeader(header, session) {
  const fact = (name) => header.querySelector(`.fact-${name} dd`);
  const shown = fact("status");
  if (shown.firstElementChild?.dataset.status !== session.status) {
    shown.replaceChildren(status(session.status));
  }
  const last = fact("last-activity");
  if (last.firstElementChild?.getAttribute("datetime") !== session.lastActivityAt) {
    last.replaceChildren(time(session.lastActivityAt));
  }
}
