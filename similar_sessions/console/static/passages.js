// What a ranked session and its matching passages look like, in the panel and in the search
// results alike: the band as a word (the number in a tooltip), the passage as plain text (a
// search's matched words marked in it).

import { h, plural, sessionHref, time } from "./dom.js";
import { highlighted } from "./highlight.js";
import { status } from "./sessions.js";

/** The band word; its number in a tooltip that keyboard users reach too. */
export function band(value, similarity) {
  const word = String(value).toLowerCase();
  return h(
    "span",
    { class: `band band-${word}`, title: `Similarity ${similarity.toFixed(2)}`, tabindex: "0" },
    word,
  );
}

/** "assistant message", "tool call", "operator note": what a passage was, in words. */
export function describe(sourceKind, role) {
  if (sourceKind === "transcript_message") return role ? `${role} message` : "message";
  return sourceKind.replaceAll("_", " ");
}

export function capitalised(text) {
  return text.charAt(0).toUpperCase() + text.slice(1);
}

/** A passage's text as text (never parsed), with `words` marked in it, or why it is not shown. */
export function passage(text, redactionState, words = []) {
  if (text === null || text === undefined) {
    return h(
      "p",
      { class: "passage passage-withheld" },
      redactionState && redactionState !== "clear"
        ? `Passage withheld (${redactionState.replaceAll("_", " ")}): its text is not shown.`
        : "Passage withheld: its text is not shown.",
    );
  }
  return h("blockquote", { class: "passage" }, highlighted(text, words));
}

/** The other session's side of a match: what it was, linked to its turn, and its text. */
export function theirSide(m, sessionId, lead = "Theirs: ") {
  const what = `${capitalised(describe(m.sourceKind, m.role))} · passage #${m.chunkIndex}`;
  return h(
    "div",
    { class: "side side-theirs" },
    h(
      "p",
      { class: "match-source" },
      lead,
      m.replayAnchor ? h("a", { href: `${sessionHref(sessionId)}#activity-${m.replayAnchor}` }, what) : what,
    ),
    passage(m.text, m.redactionState, m.matchedWords),
  );
}

/** A match of the panel: the other session's passage and this session's passage that found it. */
export function neighbourMatch(m, neighbourId) {
  const probe = m.probe;
  const ours = `${capitalised(describe(probe.sourceKind, probe.role))} · passage #${probe.chunkIndex}`;
  return h(
    "li",
    { class: "match" },
    theirSide(m, neighbourId),
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

/** A match of a search: the session's passage like the text, linked to its turn, the words
 * the text matched in it marked. */
export function foundMatch(m, sessionId) {
  return h("li", { class: "match" }, theirSide(m, sessionId, ""));
}

/** One ranked session (`kind`: neighbour or found): its title linked to the turn of its best
 * match, its band, status and start, then its match items. */
export function rankedSession(n, kind, matchItems) {
  return h(
    "li",
    { class: `ranked ${kind}` },
    h(
      "div",
      { class: "ranked-head" },
      h(
        "a",
        { class: `ranked-title ${kind}-title`, href: n.consoleLink || sessionHref(n.runtimeSessionId) },
        n.title || "Untitled session",
      ),
      band(n.band, n.similarity),
      status(n.session.status),
    ),
    h(
      "p",
      { class: "meta" },
      "Started ",
      time(n.startedAt),
      ` · ${plural(n.matchedChunkCount, "matching passage")}`,
    ),
    matchItems.length ? h("ul", { class: "matches" }, matchItems) : null,
  );
}

/** What is offered when nothing passed the floor: the API's sentence, then the nearest
 * sessions in their own list, each labelled by its band word (loose). */
export function nearestOffered(sentence, sessions, matchItemsOf) {
  return h(
    "div",
    { class: "nearest-offered" },
    h("p", { class: "empty" }, sentence),
    h("h3", { class: "nearest-heading" }, "Nearest sessions, below the floor"),
    h(
      "ol",
      { class: "nearest-list" },
      sessions.map((n) => rankedSession(n, "nearest", matchItemsOf(n))),
    ),
  );
}
