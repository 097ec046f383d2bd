// What a ranked session and its matching passages look like, in the panel and in the search
// results alike: the band as a word (the number in a tooltip), the passage as plain text.

import { h, plural, sessionHref, time } from "./dom.js";
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

// Letters, marks, digits and underscores: what the lexical model's words are made of.
const WORD_CHAR = "[\\p{L}\\p{M}\\p{N}_]";
// Scripts written without spaces: their terms are pairs of characters found anywhere.
const UNSPACED = /[\p{Script=Han}\p{Script=Hiragana}\p{Script=Katakana}\p{Script=Thai}\p{Script=Lao}\p{Script=Khmer}\p{Script=Myanmar}]/u;

function escaped(term) {
  return term.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
}

/**
 * The text as text nodes, each shared term's occurrences in a <mark>: whole words, in any
 * case (the model reads casefolded words), or anywhere for a pair of an unspaced script.
 */
export function highlighted(text, terms) {
  const shown = (terms ?? []).filter((t) => typeof t === "string" && t.length > 0);
  if (shown.length === 0) return [text];
  const alternatives = [...shown]
    .sort((a, b) => b.length - a.length)
    .map((t) => (UNSPACED.test(t) ? escaped(t) : `(?<!${WORD_CHAR})${escaped(t)}(?!${WORD_CHAR})`));
  const pattern = new RegExp(alternatives.join("|"), "giu");
  const parts = [];
  let at = 0;
  for (const found of text.matchAll(pattern)) {
    if (found[0].length === 0) continue;
    if (found.index > at) parts.push(text.slice(at, found.index));
    parts.push(h("mark", {}, found[0]));
    at = found.index + found[0].length;
  }
  if (at < text.length) parts.push(text.slice(at));
  return parts;
}

/** A passage's text as text (never parsed), its shared terms marked, or why it is not shown. */
export function passage(text, redactionState, terms = null) {
  if (text === null || text === undefined) {
    return h(
      "p",
      { class: "passage passage-withheld" },
      redactionState && redactionState !== "clear"
        ? `Passage withheld (${redactionState.replaceAll("_", " ")}): its text is not shown.`
        : "Passage withheld: its text is not shown.",
    );
  }
  return h("blockquote", { class: "passage" }, highlighted(text, terms));
}

/** "Shared terms: a, b, c" for a match that has some (marks alone are not read out); else null. */
export function termsLine(terms, lead = "Shared terms: ") {
  if (!terms || terms.length === 0) return null;
  return h("p", { class: "match-terms" }, lead, terms.join(", "));
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
    passage(m.text, m.redactionState, m.sharedTerms),
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
      passage(probe.text, "clear", m.sharedTerms),
    ),
    termsLine(m.sharedTerms),
  );
}

/** A match of a search: the session's passage like the text, linked to its turn. */
export function foundMatch(m, sessionId) {
  return h("li", { class: "match" }, theirSide(m, sessionId, ""), termsLine(m.sharedTerms, "Shared with the text: "));
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
