// The degraded block as the API answers it: the reason codes in the contract's order, and in
// `detail` one sentence per reason, in the same order.

import { h } from "./dom.js";

// Nothing passed the floor: the nearest sessions below it are offered (`nearest`), loose.
export const NOTHING_CLOSE = "SIMILAR_NOTHING_CLOSE_ENOUGH";
// Said when the API's own sentence for it could not be read from its detail.
const NEAREST_INSTEAD = "Nothing was close enough; the nearest sessions are offered instead, labelled loose.";
// Where one of the API's sentences ends and the next begins.
const BETWEEN_SENTENCES = /(?<=[.!?])\s+(?=\p{Lu})/u;

/** Each reason code's sentence, read from the detail; empty when the detail does not split
 * into one sentence per reason (then it is only ever shown whole). */
export function sentencesOf(degraded) {
  const parts = degraded.detail ? degraded.detail.split(BETWEEN_SENTENCES) : [];
  if (parts.length !== degraded.reasons.length) return new Map();
  return new Map(degraded.reasons.map((code, i) => [code, parts[i]]));
}

/** The note of the block's sentences but those the page says elsewhere (`said`, codes);
 * null when nothing is left to say. */
export function degradedNote(degraded, sentences, said = []) {
  const left = sentences.size
    ? degraded.reasons.filter((code) => !said.includes(code)).map((code) => sentences.get(code))
    : [degraded.detail].filter(Boolean);
  if (left.length === 0) return null;
  return h("div", { class: "degraded", role: "note" }, h("p", {}, left.join(" ")));
}

/** Whether an answer offers its nearest sessions: none of its own shown (`shown`, the results
 * of every page so far) and nothing close enough. */
export function offersNearest(answer, shown) {
  return shown === 0 && answer.degraded.reasons.includes(NOTHING_CLOSE) && answer.nearest.length > 0;
}

/** The API's sentence that nothing was close enough (the nearest offered instead). */
export function nothingCloseSentence(sentences) {
  return sentences.get(NOTHING_CLOSE) ?? NEAREST_INSTEAD;
}
