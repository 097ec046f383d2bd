// The "Similar sessions" panel: collapsed, asks once per session when first opened.

import { Unauthorized, graphql } from "./api.js";
import { h, plural, sessionHref, time } from "./dom.js";
import { SIMILAR_SESSIONS } from "./queries.js";

const LIMIT = 5;
const MATCHES_PER_SESSION = 2;

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
    limit: LIMIT,
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

function probeLine(probe, replayIds) {
  const what = `${describe(probe.sourceKind, probe.role)} (passage #${probe.chunkIndex})`;
  const where =
    probe.sourceId && replayIds.has(probe.sourceId)
      ? h("a", { href: `#entry-${probe.sourceId}` }, what)
      : h("span", {}, what);
  return h(
    "p",
    { class: "probe" },
    "Matched this session's ",
    where,
    " at ",
    time(probe.occurredAt, { short: true }),
  );
}

function match(m, replayIds) {
  const passage = m.text === null || m.text === undefined
    ? h(
        "p",
        { class: "passage passage-withheld" },
        m.redactionState && m.redactionState !== "clear"
          ? `Passage withheld (${m.redactionState.replaceAll("_", " ")}): its text is not shown.`
          : "Passage withheld: its text is not shown.",
      )
    : h("blockquote", { class: "passage" }, m.text);
  return h(
    "li",
    { class: "match" },
    h(
      "p",
      { class: "match-source" },
      `${capitalised(describe(m.sourceKind, m.role))} · passage #${m.chunkIndex}`,
    ),
    passage,
    probeLine(m.probe, replayIds),
  );
}

function neighbour(n, replayIds) {
  return h(
    "li",
    { class: "neighbour" },
    h(
      "div",
      { class: "neighbour-head" },
      h("a", { class: "neighbour-title", href: sessionHref(n.runtimeSessionId) }, n.title || "Untitled session"),
      band(n.band, n.similarity),
    ),
    h(
      "p",
      { class: "meta" },
      "Started ",
      time(n.startedAt),
      ` · ${plural(n.matchedChunkCount, "matching passage")}`,
    ),
    n.matches.length ? h("ul", { class: "matches" }, n.matches.map((m) => match(m, replayIds))) : null,
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

/** The panel for one session; `replayIds` lets a probe link to its replay entry. */
export function similarPanel(sessionId, { replayIds = new Set(), onUnauthorized }) {
  const body = h("div", { id: "similar-body", class: "panel-body", hidden: true, tabindex: "-1" });
  // Short news for screen readers; the list itself is not read out as it arrives.
  const status = h("p", { class: "visually-hidden", role: "status" });
  const toggle = h(
    "button",
    {
      type: "button",
      id: "similar-toggle",
      class: "panel-toggle",
      "aria-expanded": "false",
      "aria-controls": "similar-body",
    },
    h("span", { class: "chevron", "aria-hidden": "true" }),
    "Similar sessions",
  );
  const state = stateOf(sessionId);

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
      parts.push(
        h("ol", { class: "neighbours" }, state.results.map((n) => neighbour(n, replayIds))),
      );
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
    return parts;
  }

  toggle.addEventListener("click", () => {
    const open = toggle.getAttribute("aria-expanded") !== "true";
    toggle.setAttribute("aria-expanded", String(open));
    body.hidden = !open;
    if (open && state.status === "idle") load(null);
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
