// A session's replay: its turns a page at a time, each at `#activity-<id>`; a linked turn is
// paged to, scrolled into view and marked (a highlight and aria-current).

import { h, plural, time } from "./dom.js";
import { markdown } from "./markdown.js";

const FOLD_CHARS = 600;
const FOLD_LINES = 12;
const PREVIEW_CHARS = 240;
export const ANCHOR = /^#activity-([0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})$/i;

function isTool(entry) {
  return entry.role === "tool" || entry.kind.startsWith("tool");
}

function entryLabel(entry) {
  if (entry.kind === "tool_call") return "Tool call";
  if (entry.kind === "tool_result" || entry.role === "tool") return "Tool result";
  return entry.role.charAt(0).toUpperCase() + entry.role.slice(1);
}

function body(text, tool) {
  // Tool calls and results are data: shown as written. Messages are Markdown.
  const full = () => (tool ? h("div", { class: "content content-code" }, text) : markdown(text));
  const lines = text.split("\n").length;
  if (text.length <= FOLD_CHARS && lines <= FOLD_LINES) return full();
  const cut = `${text.slice(0, PREVIEW_CHARS).trimEnd()}…`;
  const preview = tool ? h("div", { class: "content content-code" }, cut) : markdown(cut);
  preview.classList.add("preview");
  preview.setAttribute("aria-hidden", "true");
  return [
    preview,
    h(
      "details",
      { class: "fold" },
      h("summary", {}, `Show all ${plural(text.length, "character")} (${plural(lines, "line")})`),
      full(),
    ),
  ];
}

function role(entry) {
  return /^[a-z_]+$/.test(entry.role) ? entry.role : "other";
}

function renderEntry(entry) {
  const tool = isTool(entry);
  return h(
    "li",
    {
      class: `entry role-${role(entry)}${tool ? " is-tool" : ""}`,
      id: `activity-${entry.id}`,
      "data-kind": entry.kind,
      tabindex: "-1",
    },
    h(
      "div",
      { class: "entry-meta" },
      h("span", { class: "entry-label" }, entryLabel(entry)),
      tool || entry.kind === "message" ? null : h("span", { class: "entry-kind" }, entry.kind),
      h("span", { class: "entry-ordinal" }, `#${entry.ordinal}`),
      time(entry.occurredAt, { short: true }),
    ),
    h("div", { class: "entry-body" }, body(entry.content, tool)),
  );
}

/**
 * The replay section, starting from its first page. `fetchPage(after, first)` answers the
 * next page ({nodes, endCursor, hasNextPage}); `pageSize` and `seekSize` are the turns asked
 * per "Show more" and per request while looking for a linked turn.
 */
export function replayView(firstPage, { fetchPage, pageSize, seekSize, onShown, onProblem }) {
  // Turns are not read out as they arrive (the view is a live region): `news` says how many.
  const list = h("ol", { class: "entries", "aria-live": "off" });
  const count = h("span", { class: "count" });
  const footer = h("div", { class: "replay-more" });
  const note = h("p", { class: "replay-note", role: "status" });
  const news = h("p", { class: "visually-hidden", role: "status" });
  const jump = h("button", { type: "button", class: "new-steps", hidden: true, onclick: showNew });
  let unseen = []; // turns that arrived below the reader's view, not scrolled to yet
  const seen = new IntersectionObserver((entries) => {
    const shownNow = entries.filter((e) => e.isIntersecting).map((e) => e.target);
    if (shownNow.length) markSeen(Math.max(...shownNow.map((el) => unseen.indexOf(el))));
  });
  let cursor = firstPage.endCursor;
  let hasNext = firstPage.hasNextPage;
  let shown = 0;
  let busy = null;
  let failed = null;

  function append(page) {
    list.append(...page.nodes.map(renderEntry));
    shown += page.nodes.length;
    cursor = page.endCursor ?? cursor;
    hasNext = page.hasNextPage;
    count.textContent = hasNext ? `${plural(shown, "step")} shown, more to load` : plural(shown, "step");
    renderFooter();
    onShown?.(shown);
  }

  function renderFooter() {
    if (!hasNext) {
      footer.replaceChildren();
      return;
    }
    const button = h(
      "button",
      {
        type: "button",
        class: "button-quiet",
        disabled: busy !== null,
        onclick: async () => {
          const before = shown;
          if (await more(pageSize)) list.children[before]?.focus();
          else footer.querySelector("button")?.focus();
        },
      },
      busy ? "Loading…" : failed ? "Retry" : `Show ${plural(pageSize, "more step")}`,
    );
    footer.replaceChildren(
      failed ? h("div", { class: "problem", role: "alert" }, h("p", {}, failed), button) : button,
    );
  }

  /** Reads one more page, one request at a time; false when it could not. */
  async function more(size) {
    if (!hasNext) return false;
    if (busy) return busy;
    busy = fetchPage(cursor, size).then(
      (page) => {
        failed = null;
        append(page);
        return true;
      },
      (error) => {
        failed = `More steps could not be loaded. ${error.message ?? ""}`.trim();
        onProblem?.(error);
        return false;
      },
    );
    renderFooter();
    try {
      return await busy;
    } finally {
      busy = null;
      renderFooter();
    }
  }

  /** Pages on until `wanted` turns are shown (or the replay ends). */
  async function showAtLeast(wanted) {
    while (shown < wanted && hasNext) {
      if (!(await more(Math.min(seekSize, Math.max(pageSize, wanted - shown))))) return;
    }
  }

  /** Pages on until the turn is shown, then marks it; `scroll` brings it into view. */
  async function reveal(activityId, { scroll = true } = {}) {
    const id = `activity-${activityId}`;
    while (!document.getElementById(id) && hasNext) {
      if (!(await more(seekSize))) return false;
    }
    for (const old of list.querySelectorAll("[aria-current]")) {
      old.removeAttribute("aria-current");
      old.classList.remove("is-target");
    }
    const target = document.getElementById(id);
    if (!target || !list.contains(target)) {
      note.textContent = "The linked step is not part of this session's replay.";
      return false;
    }
    note.textContent = "";
    target.setAttribute("aria-current", "true");
    target.classList.add("is-target");
    const fold = target.querySelector("details.fold");
    if (fold) fold.open = true;
    target.focus({ preventScroll: true });
    if (scroll) target.scrollIntoView({ block: "center" });
    return true;
  }

  /** Where the replay shown ends: the cursor after its last turn, and whether it is the
   * replay's end (no page left to read), so turns that arrived since can follow it. */
  function tail() {
    return { after: cursor ?? null, atEnd: !hasNext && busy === null };
  }

  /** Appends the turns that arrived after `after` (the tail asked), leaving the turns shown
   * as they are; those below the reader's view are offered by a "N new steps" button rather
   * than scrolled to. Returns how many were appended. */
  function grow(page, after) {
    if (!tail().atEnd || after !== (cursor ?? null) || page.nodes.length === 0) return 0;
    const before = shown;
    if (!list.parentNode) empty.replaceWith(list);
    append(page);
    const added = [...list.children].slice(before);
    const below = added.filter((el) => el.getBoundingClientRect().top >= window.innerHeight);
    for (const el of below) seen.observe(el);
    unseen.push(...below);
    news.textContent = `${plural(added.length, "new step")} at the end of the replay.`;
    renderJump();
    return added.length;
  }

  function markSeen(upTo) {
    if (upTo < 0) return;
    for (const el of unseen.splice(0, upTo + 1)) seen.unobserve(el);
    renderJump();
  }

  function renderJump() {
    jump.hidden = unseen.length === 0;
    jump.textContent = `↓ ${plural(unseen.length, "new step")}`;
  }

  /** Brings the first turn the reader has not seen into view, and focus to it. */
  function showNew() {
    const first = unseen[0];
    if (!first) return;
    markSeen(unseen.length - 1);
    first.scrollIntoView({ block: "start" });
    first.focus({ preventScroll: true });
  }

  append(firstPage);
  const empty = h("p", { class: "empty" }, "This session has no recorded activity.");
  const element = h(
    "section",
    { class: "replay", "aria-labelledby": "replay-title" },
    h("h2", { id: "replay-title" }, "Replay ", count),
    note,
    news,
    shown || hasNext ? list : empty,
    jump,
    footer,
  );
  return { element, reveal, showAtLeast, shown: () => shown, tail, grow };
}
