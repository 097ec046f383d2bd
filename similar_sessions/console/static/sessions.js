// The sessions list and one session's header and replay.

import { h, plural, sessionHref, time } from "./dom.js";

const FOLD_CHARS = 600;
const FOLD_LINES = 12;
const PREVIEW_CHARS = 240;

function status(value) {
  const known = /^[a-z_]+$/.test(value) ? value : "other";
  return h("span", { class: `status status-${known}` }, value.replaceAll("_", " "));
}

export function renderSessionList(page, { isFirstPage }) {
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
      ),
    ),
  );
  const pager = h(
    "nav",
    { class: "pager", "aria-label": "Pages of sessions" },
    isFirstPage ? null : h("a", { href: "/console/runtime-sessions" }, "Newest sessions"),
    page.hasNextPage && page.endCursor
      ? h(
          "a",
          {
            href: `/console/runtime-sessions?${new URLSearchParams({ after: page.endCursor })}`,
            rel: "next",
          },
          "Older sessions",
        )
      : null,
  );
  return [
    h("h1", { tabindex: "-1" }, "Sessions"),
    h("p", { class: "lede" }, "The account's recorded agent runs, newest first."),
    items.length
      ? h("ul", { class: "session-list" }, items)
      : h("p", { class: "empty" }, isFirstPage ? "No sessions in this account yet." : "No older sessions."),
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

function isTool(entry) {
  return entry.role === "tool" || entry.kind.startsWith("tool");
}

function entryLabel(entry) {
  if (entry.kind === "tool_call") return "Tool call";
  if (entry.kind === "tool_result" || entry.role === "tool") return "Tool result";
  return entry.role.charAt(0).toUpperCase() + entry.role.slice(1);
}

function content(text, tool) {
  const className = tool ? "content content-code" : "content";
  const lines = text.split("\n").length;
  if (text.length <= FOLD_CHARS && lines <= FOLD_LINES) return h("div", { class: className }, text);
  const preview = `${text.slice(0, PREVIEW_CHARS).trimEnd()}…`;
  return [
    h("div", { class: `${className} preview`, "aria-hidden": "true" }, preview),
    h(
      "details",
      { class: "fold" },
      h("summary", {}, `Show all ${plural(text.length, "character")} (${plural(lines, "line")})`),
      h("div", { class: className }, text),
    ),
  ];
}

function role(entry) {
  return /^[a-z_]+$/.test(entry.role) ? entry.role : "other";
}

export function renderReplay(replay) {
  const entries = replay.map((entry) => {
    const tool = isTool(entry);
    return h(
      "li",
      {
        class: `entry role-${role(entry)}${tool ? " is-tool" : ""}`,
        id: `entry-${entry.id}`,
        "data-kind": entry.kind,
      },
      h(
        "div",
        { class: "entry-meta" },
        h("span", { class: "entry-label" }, entryLabel(entry)),
        tool || entry.kind === "message" ? null : h("span", { class: "entry-kind" }, entry.kind),
        h("span", { class: "entry-ordinal" }, `#${entry.ordinal}`),
        time(entry.occurredAt, { short: true }),
      ),
      h("div", { class: "entry-body" }, content(entry.content, tool)),
    );
  });
  return h(
    "section",
    { class: "replay", "aria-labelledby": "replay-title" },
    h("h2", { id: "replay-title" }, "Replay ", h("span", { class: "count" }, plural(replay.length, "step"))),
    entries.length
      ? h("ol", { class: "entries" }, entries)
      : h("p", { class: "empty" }, "This session has no recorded activity."),
  );
}
