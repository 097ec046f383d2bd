// The "Similar sessions" panel: collapsed unless asked for, and each session compared at most
// once per page view (its answer may come with the page's own request).

import { Unauthorized, graphql } from "./api.js";
import { h, plural, sessionHref, time } from "./dom.js";
import { alwaysOpen } from "./memory.js";
import { MATCHES_PER_SESSION, SIMILAR_LIMIT, SIMILAR_SESSIONS } from "./queries.js";
import { status as statusBadge } from "./sessions.js";

const EMPTY = {
  similar_session_not_embedded:
    "Nothing to compare yet: this session has not been embedded.",
  similar_no_comparable_sessions:
    "Nothing comparable: no other session of this account is embedded with the same model.",
  nothing_similar: "No similar sessions: no other session of this account came close to this one.",
};

// One state per session, kept for the life of the page: reopening asks nothing more.
const states = new Map();

function stateOf(sessionId) {
  if (!states.has(sessionId)) {
    states.set(sessionId, { status: "idle", answer: null, results: [], error: null, more: "idle" });
  }
  return states.get(sessionId);
}

async function fetchPage(sessionId, after) {
  const data = await graphql(SIMILAR_SESSIONS, {
    id: sessionId,
    limit: SIMILAR_LIMIT,
    maxMatches: MATCHES_PER_SESSION,
    after,
  });
  if (!data.runtimeSession) throw new Error("This session is no longer available.");
  return data.runtimeSession.similarSessions;
}

function band(value, similarity) {
  const word = String(value).toLowerCase();
  return h(
    "span",
    { class: `band band-${word}`, title: `Similarity ${similarity.toFixed(2)}`, tabindex: "0" },
    word,
  );
}

/** "assistant message", "tool call", "operator note": what a passage was, in words. */
function describe(sourceKind, role) {
  if (sourceKind === "transcript_message") return role ? `${role} message` : "message";
  return sourceKind.replaceAll("_", " ");
}

function capitalised(text) {
  return text.charAt(0).toUpperCase() + text.slice(1);
}

function passage(text, redactionState) {
  if (text === null || text === undefined) {
    return h(
      "p",
      { class: "passage passage-withheld" },
      redactionState && redactionState !== "clear"
        ? `Passage withheld (${redactionState.replaceAll("_", " ")}): its text is not shown.`
        : "Passage withheld: its text is not shown.",
    );
  }
  return h("blockquote", { class: "passage" }, text);
}

/** One match: the other session's passage and this session's passage that found it. */
function match(m, neighbourId) {
  const theirs = `${capitalised(describe(m.sourceKind, m.role))} · passage #${m.chunkIndex}`;
  const probe = m.probe;
  const ours = `${capitalised(describe(probe.sourceKind, probe.role))} · passage #${probe.chunkIndex}`;
  return h(
    "li",
    { class: "match" },
    h(
      "div",
      { class: "side side-theirs" },
      h(
        "p",
        { class: "match-source" },
        "Theirs: ",
        m.replayAnchor
          ? h("a", { href: `${sessionHref(neighbourId)}#activity-${m.replayAnchor}` }, theirs)
          : theirs,
      ),
      passage(m.text, m.redactionState),
    ),
    h(
      "div",
      { class: "side side-ours" },
      h(
        "p",
        { class: "match-source probe" },
        "This session's: ",
        probe.replayAnchor ? h("a", { href: `#activity-${probe.replayAnchor}` }, ours) : ours,
        " at ",
        time(probe.occurredAt, { short: true }),
      ),
      passage(probe.text, "clear"),
    ),
  );
}

function neighbour(n) {
  return h(
    "li",
    { class: "neighbour" },
    h(
      "div",
      { class: "neighbour-head" },
      h(
        "a",
        { class: "neighbour-title", href: n.consoleLink || sessionHref(n.runtimeSessionId) },
        n.title || "Untitled session",
      ),
      band(n.band, n.similarity),
      statusBadge(n.session.status),
    ),
    h(
      "p",
      { class: "meta" },
      "Started ",
      time(n.startedAt),
      ` · ${plural(n.matchedChunkCount, "matching passage")}`,
    ),
    n.matches.length
      ? h("ul", { class: "matches" }, n.matches.map((m) => match(m, n.runtimeSessionId)))
      : null,
  );
}

// GraphQL names the reasons by the DegradedReason enum: the REST codes, upper-cased.
function emptySentence(reasons) {
  if (reasons.includes("SIMILAR_SESSION_NOT_EMBEDDED")) return EMPTY.similar_session_not_embedded;
  if (reasons.includes("SIMILAR_NO_COMPARABLE_SESSIONS")) return EMPTY.similar_no_comparable_sessions;
  return EMPTY.nothing_similar;
}

function problem(sentence, onRetry) {
  return h(
    "div",
    { class: "problem", role: "alert" },
    h("p", {}, sentence),
    h("button", { type: "button", class: "button", onclick: onRetry }, "Retry"),
  );
}

/** Forgets every answer, so a sign-out leaves nothing of the last account on the page. */
export function forgetSimilarSessions() {
  states.clear();
}

function announcement(state) {
  if (state.status === "loading") return "Looking for similar sessions…";
  if (state.status === "error") return "Similar sessions could not be loaded.";
  if (state.status !== "ready") return "";
  if (state.results.length === 0) return emptySentence(state.answer.degraded.reasons);
  return `${plural(state.results.length, "similar session")} shown.`;
}

/**
 * The panel for one session. `answer` is the first page of neighbours when the page's own
 * request brought it (or `error`, a sentence, when that part failed); `open` shows it at once;
 * `onToggle(open)` hears the operator open or close it.
 */
export function similarPanel(sessionId, { open = false, answer = null, error = null, onToggle, onUnauthorized }) {
  const body = h("div", { id: "similar-body", class: "panel-body", tabindex: "-1" });
  // Short news for screen readers; the list itself is not read out as it arrives.
  const status = h("p", { class: "visually-hidden", role: "status" });
  const toggle = h(
    "button",
    {
      type: "button",
      id: "similar-toggle",
      class: "panel-toggle",
      "aria-expanded": String(open),
      "aria-controls": "similar-body",
    },
    h("span", { class: "chevron", "aria-hidden": "true" }),
    "Similar sessions",
  );
  body.hidden = !open;
  const state = stateOf(sessionId);
  if (state.status === "idle" && answer) {
    Object.assign(state, { status: "ready", answer, results: answer.results });
  } else if (state.status === "idle" && error) {
    Object.assign(state, { status: "error", error });
  }

  async function load(after) {
    const first = after === null;
    const shown = state.results.length;
    if (first) state.status = "loading";
    else state.more = "loading";
    render();
    try {
      const answer = await fetchPage(sessionId, after);
      state.answer = answer;
      state.results = first ? answer.results : [...state.results, ...answer.results];
      if (first) state.status = "ready";
      else state.more = "idle";
    } catch (error) {
      if (first) state.status = "idle";
      else state.more = "idle";
      if (error instanceof Unauthorized) {
        onUnauthorized?.();
        return;
      }
      state.error = error.message || "The similar sessions could not be loaded.";
      if (first) state.status = "error";
      else state.more = "error";
    }
    const hadFocus = body.contains(document.activeElement) || document.activeElement === document.body;
    render();
    // A Retry or "Show more" button that was pressed is gone now: keep the reader's place.
    if (hadFocus && !body.hidden) {
      const next = body.querySelectorAll(".neighbour-title")[first ? 0 : shown];
      (next ?? body.querySelector("button") ?? body).focus();
    }
  }

  function render() {
    body.replaceChildren(...content());
    body.setAttribute("aria-busy", String(state.status === "loading"));
    status.textContent = announcement(state);
  }

  function content() {
    if (state.status === "loading") {
      return [h("p", { class: "loading" }, "Looking for similar sessions…")];
    }
    if (state.status === "error") {
      return [problem(`Similar sessions could not be loaded. ${state.error}`, () => load(null))];
    }
    if (state.status !== "ready") return [];
    const answer = state.answer;
    const parts = [];
    if (answer.degraded.detail) {
      parts.push(h("div", { class: "degraded", role: "note" }, h("p", {}, answer.degraded.detail)));
    }
    if (state.results.length === 0) {
      parts.push(h("p", { class: "empty" }, emptySentence(answer.degraded.reasons)));
    } else {
      parts.push(h("ol", { class: "neighbours" }, state.results.map(neighbour)));
    }
    if (state.more === "error") {
      parts.push(
        problem(`More similar sessions could not be loaded. ${state.error}`, () =>
          load(answer.endCursor),
        ),
      );
    } else if (answer.hasNextPage && answer.endCursor) {
      parts.push(
        h(
          "button",
          {
            type: "button",
            class: "button-quiet",
            disabled: state.more === "loading",
            onclick: () => load(answer.endCursor),
          },
          state.more === "loading" ? "Loading…" : "Show more similar sessions",
        ),
      );
    }
    if (answer.embeddedChunks > 0 && answer.modelIdentity) {
      parts.push(
        h(
          "p",
          { class: "fine-print" },
          `Compared ${answer.probeChunks} of ${plural(answer.embeddedChunks, "embedded passage")} ` +
            `(model ${answer.modelIdentity}).`,
        ),
      );
    }
    parts.push(preference());
    return parts;
  }

  function preference() {
    const box = h("input", { type: "checkbox", id: "similar-always-open" });
    box.checked = alwaysOpen.get();
    box.addEventListener("change", () => alwaysOpen.set(box.checked));
    return h(
      "p",
      { class: "preference" },
      box,
      " ",
      h("label", { for: "similar-always-open" }, "Always open this panel (this browser)"),
    );
  }

  toggle.addEventListener("click", () => {
    const opening = toggle.getAttribute("aria-expanded") !== "true";
    toggle.setAttribute("aria-expanded", String(opening));
    body.hidden = !opening;
    onToggle?.(opening);
    if (opening && state.status === "idle") load(null);
  });
  if (state.status !== "idle") render();

  return h(
    "section",
    { class: "panel", "aria-labelledby": "similar-toggle" },
    h("h2", { class: "panel-heading" }, toggle),
    body,
    status,
  );
}
