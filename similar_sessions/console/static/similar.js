// The "Similar sessions" panel: collapsed unless asked for; its neighbours can be filtered by
// status, and each session is compared at most once per filter and page view (the first answer
// may come with the page's own request). The timeline comes with the first page of neighbours;
// when no neighbour was close enough, the nearest sessions below the floor are offered, loose.

import { RequestFailed, Unauthorized, graphqlPartial, refusal } from "./api.js";
import { NOTHING_CLOSE, degradedNote, nothingCloseSentence, offersNearest, sentencesOf } from "./degraded.js";
import { statusFilter } from "./filter.js";
import { h, keepingPlace, plural } from "./dom.js";
import { alwaysOpen, rememberNeighbourStatus } from "./memory.js";
import { nearestOffered, neighbourMatch, rankedSession } from "./passages.js";
import {
  MATCHES_PER_SESSION,
  MORE_SIMILAR_SESSIONS,
  SIMILAR_LIMIT,
  SIMILAR_SESSIONS,
} from "./queries.js";
import { timelineRefused, timelineView } from "./timeline.js";

const EMPTY = {
  similar_session_not_embedded:
    "Nothing to compare yet: this session has not been embedded.",
  similar_no_comparable_sessions:
    "Nothing comparable: no other session of this account is embedded with the same model.",
  nothing_similar: "No similar sessions: no other session of this account came close to this one.",
};
// The most neighbours one request may ask for (the API's bound on `limit`).
const REFRESH_LIMIT = 20;
// The status every operator asks about first (issue #17: which failed sessions went like this).
const ASKED_FIRST = "failed";

// One state per session and status filter, kept for the life of the page: coming back to a
// filter, or reopening the panel, asks nothing.
const states = new Map();

function stateOf(sessionId, filter) {
  const key = `${sessionId} ${filter ?? ""}`;
  if (!states.has(key)) {
    states.set(key, {
      sessionId,
      filter,
      status: "idle",
      answer: null,
      timeline: null,
      timelineError: null,
      results: [],
      error: null,
      more: "idle",
    });
  }
  return states.get(key);
}

/** The statuses of every neighbour this page has shown for the session. */
function seenStatuses(sessionId) {
  const seen = new Set();
  for (const state of states.values()) {
    if (state.sessionId !== sessionId) continue;
    for (const n of state.results) seen.add(n.session.status);
  }
  return seen;
}

/**
 * A request's errors by part: `similar` (the neighbours, refused: their field is null),
 * `timeline` (its count alone, refused: the neighbours came) and `rest` (anything else).
 */
export function similarErrors(errors) {
  const parts = { similar: [], timeline: [], rest: [] };
  for (const e of errors) {
    const path = e.path ?? [];
    const at = path.indexOf("similarSessions");
    if (at < 0) parts.rest.push(e);
    else if (path.at(-1) === "timeline" && path.length === at + 2) parts.timeline.push(e);
    else parts.similar.push(e);
  }
  return parts;
}

/** One page of neighbours (the first with its timeline): `{answer, timelineError}`. */
async function fetchPage(sessionId, filter, after, limit = SIMILAR_LIMIT) {
  const variables = {
    id: sessionId,
    limit,
    maxMatches: MATCHES_PER_SESSION,
    status: filter ? [filter] : null,
  };
  const { data, errors } = after === null
    ? await graphqlPartial(SIMILAR_SESSIONS, variables)
    : await graphqlPartial(MORE_SIMILAR_SESSIONS, { ...variables, after });
  const failed = similarErrors(errors);
  if (failed.rest.length || failed.similar.length) {
    throw new RequestFailed(refusal([...failed.rest, ...failed.similar]));
  }
  if (!data.runtimeSession) throw new Error("This session is no longer available.");
  const timelineError = failed.timeline.length ? refusal(failed.timeline) : null;
  return { answer: data.runtimeSession.similarSessions, timelineError };
}

// GraphQL names the reasons by the DegradedReason enum: the REST codes, upper-cased.
function emptySentence(reasons, filter) {
  if (reasons.includes("SIMILAR_SESSION_NOT_EMBEDDED")) return EMPTY.similar_session_not_embedded;
  if (reasons.includes("SIMILAR_NO_COMPARABLE_SESSIONS")) {
    return filter
      ? `Nothing comparable: no other session with status “${filter}” is embedded with the same model.`
      : EMPTY.similar_no_comparable_sessions;
  }
  return filter
    ? `No similar sessions with status “${filter}”: none of them came close to this one.`
    : EMPTY.nothing_similar;
}

function matchItems(n) {
  return n.matches.map((m) => neighbourMatch(m, n.runtimeSessionId));
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

function announcement(state, filter) {
  if (state.status === "loading") return "Looking for similar sessions…";
  if (state.status === "error") return "Similar sessions could not be loaded.";
  if (state.status !== "ready") return "";
  if (offersNearest(state.answer, state.results.length)) {
    const offered = plural(state.answer.nearest.length, "nearest session");
    return `No session was close enough; ${offered} offered, labelled loose.`;
  }
  if (state.results.length === 0) return emptySentence(state.answer.degraded.reasons, filter);
  const which = filter ? ` with status “${filter}”` : "";
  return `${plural(state.results.length, "similar session")}${which} shown.`;
}

/**
 * The panel for one session. `answer` is the first page of neighbours (with its timeline) when
 * the page's own request brought it, for the status filter `filter` (null: any status), or
 * `error`, a sentence, when that part failed; `timelineError`, a sentence, when the timeline
 * alone was refused; `open` shows it at once; `onToggle(open)` hears the operator open or close
 * it. `sessionStatus` is offered as a filter beside the ones seen.
 */
export function similarPanel(
  sessionId,
  {
    open = false,
    answer = null,
    error = null,
    timelineError = null,
    filter = null,
    sessionStatus = null,
    onToggle,
    onUnauthorized,
  },
) {
  const results = h("div", { class: "panel-results" });
  const chooser = statusFilter({ onApply: apply });
  const body = h("div", { id: "similar-body", class: "panel-body", tabindex: "-1" }, chooser.element, results);
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
  let grouping = null; // the timeline's grouping the operator chose, for this page view
  const current = () => stateOf(sessionId, filter);
  const landed = current();
  if (landed.status === "idle" && answer) {
    Object.assign(landed, {
      status: "ready",
      answer,
      timeline: answer.timeline,
      timelineError,
      results: answer.results,
    });
  } else if (landed.status === "idle" && error) {
    Object.assign(landed, { status: "error", error });
  }

  /** Asks one page for `state` (its first when `after` is null); shows it if still current. */
  async function load(state, after) {
    const first = after === null;
    const shown = state.results.length;
    if (first) state.status = "loading";
    else state.more = "loading";
    render();
    try {
      const { answer, timelineError } = await fetchPage(sessionId, state.filter, after);
      state.answer = answer;
      if (first) Object.assign(state, { timeline: answer.timeline, timelineError });
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
    if (state !== current()) return; // the operator chose another filter meanwhile
    // A Retry or "Show more" button that was pressed is gone now: keep the reader's place.
    const lost = document.activeElement === document.body;
    render();
    if (lost && !body.hidden) {
      const next = results.querySelectorAll(".neighbour-title")[first ? 0 : shown];
      (next ?? results.querySelector("button") ?? body).focus();
    }
  }

  function apply(chosen) {
    if (chosen === filter) return;
    filter = chosen;
    rememberNeighbourStatus(filter);
    const state = current();
    if (state.status === "idle" || state.status === "error") load(state, null);
    else render();
  }

  function render() {
    const state = current();
    results.replaceChildren(...content(state));
    body.setAttribute("aria-busy", String(state.status === "loading"));
    const said = announcement(state, filter);
    if (status.textContent !== said) status.textContent = said; // the same news is not said again
    const offered = new Set([ASKED_FIRST, ...seenStatuses(sessionId)]);
    if (sessionStatus) offered.add(sessionStatus);
    if (filter) offered.add(filter);
    chooser.offer([...offered].sort(), filter);
  }

  function content(state) {
    if (state.status === "loading") {
      return [h("p", { class: "loading" }, "Looking for similar sessions…")];
    }
    if (state.status === "error") {
      return [problem(`Similar sessions could not be loaded. ${state.error}`, () => load(state, null))];
    }
    if (state.status !== "ready") return [];
    const answer = state.answer;
    const sentences = sentencesOf(answer.degraded);
    const nearest = offersNearest(answer, state.results.length);
    const parts = [degradedNote(answer.degraded, sentences, nearest ? [NOTHING_CLOSE] : [])];
    if (state.timeline && (state.timeline.sessions > 0 || state.results.length > 0)) {
      parts.push(timelineView(state.timeline, { grouping, onGrouping: (g) => (grouping = g) }));
    } else if (state.timelineError) {
      // Retry asks the first page again: the neighbours and their timeline, in one request.
      const sentence = `The timeline could not be counted. ${state.timelineError}`;
      parts.push(timelineRefused(problem(sentence, () => load(state, null))));
    }
    parts.push(...neighbours(state, sentences, nearest));
    if (state.more === "error") {
      parts.push(
        problem(`More similar sessions could not be loaded. ${state.error}`, () =>
          load(state, answer.endCursor),
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
            onclick: () => load(state, answer.endCursor),
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
            `(model ${answer.modelIdentity}; a passage had to reach similarity ${answer.floor.toFixed(2)}).`,
        ),
      );
    }
    parts.push(preference());
    return parts.filter(Boolean);
  }

  /** The neighbours, or the nearest sessions offered in their place, or why there are none. */
  function neighbours(state, sentences, nearest) {
    const answer = state.answer;
    if (nearest) {
      return [nearestOffered(nothingCloseSentence(sentences), answer.nearest, matchItems)];
    }
    if (state.results.length === 0) {
      return [h("p", { class: "empty" }, emptySentence(answer.degraded.reasons, filter))];
    }
    return [
      h("h3", { class: "neighbours-title" }, "Most similar sessions"),
      h("ol", { class: "neighbours" }, state.results.map((n) => rankedSession(n, "neighbour", matchItems(n)))),
    ];
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
    if (opening && current().status === "idle") load(current(), null);
  });
  if (current().status !== "idle") render();

  /**
   * The neighbours asked again, for a running session whose passages the indexer has taken
   * since (its `sessionStatus` offered as a filter): the filter shown is redrawn in place, with
   * as many neighbours as were shown and the reader's focus kept; the other filters' answers
   * are forgotten, asked again when chosen. A collapsed panel asks nothing: opening it asks
   * afresh. A refusal leaves the neighbours shown as they were.
   */
  async function refresh({ sessionStatus: now = sessionStatus } = {}) {
    sessionStatus = now;
    const state = current();
    for (const [key, other] of states) {
      if (other.sessionId !== sessionId || other === state || other.status === "loading") continue;
      states.delete(key);
    }
    if (state.status !== "ready" || state.more === "loading") return;
    if (body.hidden) {
      state.status = "idle";
      return;
    }
    let page;
    try {
      const shown = Math.min(REFRESH_LIMIT, Math.max(SIMILAR_LIMIT, state.results.length));
      page = await fetchPage(sessionId, state.filter, null, shown);
    } catch (error) {
      if (error instanceof Unauthorized) onUnauthorized?.();
      return;
    }
    if (state !== current() || state.status !== "ready" || state.more === "loading") return;
    Object.assign(state, {
      answer: page.answer,
      timeline: page.answer.timeline,
      timelineError: page.timelineError,
      results: page.answer.results,
      error: null,
      more: "idle",
    });
    const focusable = "a[href], button, input, select, [tabindex]";
    const at = [...results.querySelectorAll(focusable)].indexOf(document.activeElement);
    keepingPlace(render);
    if (at >= 0) results.querySelectorAll(focusable)[at]?.focus({ preventScroll: true });
  }

  const element = h(
    "section",
    { class: "panel", "aria-labelledby": "similar-toggle" },
    h("h2", { class: "panel-heading" }, toggle),
    body,
    status,
  );
  return { element, refresh };
}
