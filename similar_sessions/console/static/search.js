// Search by describing what happened: the sessions with passages like the text
// (Query.searchSessions), a page at a time, shown beside the titles and source ids containing it;
// which legs of the search ran, and, when nothing was close enough, the nearest sessions.

import { Unauthorized, graphql } from "./api.js";
import { NOTHING_CLOSE, degradedNote, nothingCloseSentence, offersNearest, sentencesOf } from "./degraded.js";
import { h, plural } from "./dom.js";
import { legsLine } from "./legs.js";
import { foundMatch, nearestOffered, rankedSession } from "./passages.js";
import { DESCRIBED_SEARCH_MAX, MATCHES_PER_SESSION, SEARCH_LIMIT, SEARCH_SESSIONS } from "./queries.js";

const NOTHING = "No session has a passage like this text.";

function matchItems(n) {
  return n.matches.map((m) => foundMatch(m, n.runtimeSessionId));
}

/** The space of the similarities shown, and the floor passages found by meaning had to reach. */
function finePrint(answer) {
  const dense = answer.legs.some((l) => l.leg === "DENSE" && l.ran);
  const floor = dense ? `; by meaning, a passage had to reach similarity ${answer.floor.toFixed(2)}` : "";
  return h("p", { class: "fine-print" }, `Compared with model ${answer.modelIdentity}${floor}.`);
}

function problem(sentence, onRetry) {
  return h(
    "div",
    { class: "problem", role: "alert" },
    h("p", {}, sentence),
    h("button", { type: "button", class: "button", onclick: onRetry }, "Retry"),
  );
}

/**
 * The section "Sessions that went like this" for `text`; it asks its first page at once, with
 * `key` (the page's own request may still be signing in with it). `onUnauthorized` hears a key
 * refused by a later request ("Show more", Retry).
 */
export function describedSearch(text, { key, onUnauthorized }) {
  const body = h("div", { class: "found-body" });
  const status = h("p", { class: "visually-hidden", role: "status" });
  const state = { status: "loading", answer: null, results: [], more: "idle", error: null };

  async function load(after) {
    const first = after === null;
    const shown = state.results.length;
    if (first) state.status = "loading";
    else state.more = "loading";
    render();
    try {
      const data = await graphql(
        SEARCH_SESSIONS,
        { text, limit: SEARCH_LIMIT, maxMatches: MATCHES_PER_SESSION, after },
        key,
      );
      const answer = data.searchSessions;
      state.answer = answer;
      state.results = first ? answer.results : [...state.results, ...answer.results];
      if (first) state.status = "ready";
      else state.more = "idle";
    } catch (error) {
      // A key refused on landing is the page's own request's to report.
      if (error instanceof Unauthorized && !first) {
        state.more = "idle";
        onUnauthorized?.();
        return;
      }
      state.error = error.message || "The search could not be run.";
      if (first) state.status = "error";
      else state.more = "error";
    }
    // A Retry or "Show more" button that was pressed is gone now: keep the reader's place.
    const lost = document.activeElement === document.body;
    render();
    if (lost && !first) {
      const next = body.querySelectorAll(".found-title")[shown];
      (next ?? body.querySelector("button") ?? body).focus();
    }
  }

  function render() {
    body.replaceChildren(...content());
    body.setAttribute("aria-busy", String(state.status === "loading"));
    status.textContent = announcement();
  }

  function announcement() {
    if (state.status === "loading") return "Looking for sessions that went like this…";
    if (state.status === "error") return "Sessions that went like this could not be looked for.";
    if (state.results.length) return `${plural(state.results.length, "session")} went like this.`;
    const { nearest, degraded } = state.answer;
    if (offersNearest(state.answer, 0)) {
      return `Nothing was close enough; ${plural(nearest.length, "nearest session")} offered, labelled loose.`;
    }
    return degraded.reasons.includes(NOTHING_CLOSE) ? NOTHING : (degraded.detail ?? NOTHING);
  }

  function content() {
    if (state.status === "loading") {
      return [h("p", { class: "loading" }, "Looking for sessions that went like this…")];
    }
    if (state.status === "error") {
      return [problem(`The search could not be run. ${state.error}`, () => load(null))];
    }
    const answer = state.answer;
    const sentences = sentencesOf(answer.degraded);
    const legs = legsLine(answer.legs, answer.degraded, sentences);
    const nearest = offersNearest(answer, state.results.length);
    // Nothing passed: said under the note, with the nearest or (none to offer) as NOTHING.
    const closeNone = state.results.length === 0 && answer.degraded.reasons.includes(NOTHING_CLOSE);
    const said = [...(legs?.said ?? []), ...(closeNone ? [NOTHING_CLOSE] : [])];
    const note = degradedNote(answer.degraded, sentences, said);
    const parts = [legs?.element, note];
    if (state.results.length) {
      parts.push(h("ol", { class: "found-list" }, state.results.map((n) => rankedSession(n, "found", matchItems(n)))));
    } else if (nearest) {
      parts.push(nearestOffered(nothingCloseSentence(sentences), answer.nearest, matchItems));
    } else if (closeNone || !note) {
      parts.push(h("p", { class: "empty" }, NOTHING));
    }
    parts.push(more(answer));
    if (answer.modelIdentity && (state.results.length || nearest)) parts.push(finePrint(answer));
    return parts.filter(Boolean);
  }

  /** "Show more", or why more could not be loaded; null on the last page. */
  function more(answer) {
    if (state.more === "error") {
      return problem(`More sessions could not be loaded. ${state.error}`, () => load(answer.endCursor));
    }
    if (!answer.hasNextPage || !answer.endCursor) return null;
    return h(
      "button",
      {
        type: "button",
        class: "button-quiet",
        disabled: state.more === "loading",
        onclick: () => load(answer.endCursor),
      },
      state.more === "loading" ? "Loading…" : "Show more sessions that went like this",
    );
  }

  if (text.length <= DESCRIBED_SEARCH_MAX) load(null);
  else body.replaceChildren(h("p", { class: "empty" }, "Texts of at most 2,000 characters are compared."));
  return h(
    "section",
    { class: "described", id: "went-like-this", "aria-labelledby": "described-title" },
    h("h2", { id: "described-title" }, "Sessions that went like this"),
    h("p", { class: "lede" }, "Sessions with passages like the text, most similar first."),
    body,
    status,
  );
}
