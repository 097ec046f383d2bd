// The sessions list (all of them, or those a search found) and one session's header.

import { h, sessionHref, time } from "./dom.js";

export function status(value) {
  const known = /^[a-z_]+$/.test(value) ? value : "other";
  return h("span", { class: `status status-${known}` }, value.replaceAll("_", " "));
}

function listHref(params) {
  const query = new URLSearchParams(Object.entries(params).filter(([, v]) => v));
  return `/console/runtime-sessions${query.size ? `?${query}` : ""}`;
}

export function renderSessionList(page, { isFirstPage, search = null }) {
  const items = page.nodes.map((s) =>
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
  const pager = h(
    "nav",
    { class: "pager", "aria-label": "Pages of sessions" },
    isFirstPage ? null : h("a", { href: listHref({ q: search }) }, "Newest sessions"),
    page.hasNextPage && page.endCursor
      ? h("a", { href: listHref({ q: search, after: page.endCursor }), rel: "next" }, "Older sessions")
      : null,
  );
  let empty = isFirstPage ? "No sessions in this account yet." : "No older sessions.";
  if (search) empty = isFirstPage ? "No session's title or source id contains this text." : "No older matches.";
  return [
    h("h1", { tabindex: "-1" }, search ? `Sessions matching “${search}”` : "Sessions"),
    search
      ? h(
          "p",
          { class: "lede" },
          "Titles and source ids that contain the text, newest first. ",
          h("a", { href: listHref({}) }, "Show all sessions"),
          ".",
        )
      : h("p", { class: "lede" }, "The account's recorded agent runs, newest first."),
    items.length ? h("ul", { class: "session-list" }, items) : h("p", { class: "empty" }, empty),
    pager,
  ];
}

export function renderSessionHeader(session) {
  const fact = (term, ...value) => h("div", {}, h("dt", {}, term), h("dd", {}, ...value));
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
