// Which legs of a search ran, said in words (never by colour alone): the lexical leg matches
// the text's words (BM25), the dense leg its meaning, in the account's dense model.

import { h } from "./dom.js";

// What the operator asked for (a window, a filter): never why a leg could not run.
const ASKED = new Set(["SIMILAR_WINDOW_APPLIED", "SIMILAR_FILTER_APPLIED"]);

/** A model identity's name alone: "local:all-minilm-l6-v2@384" is "all-minilm-l6-v2". */
export function modelName(identity) {
  const name = String(identity ?? "");
  const start = name.indexOf(":") + 1;
  const end = name.lastIndexOf("@");
  return name.slice(start, end > start ? end : undefined) || name;
}

function lowerFirst(sentence) {
  // "The search text…" reads on after a colon; an acronym ("TEI …") keeps its capitals.
  return /^\p{Lu}\p{Ll}/u.test(sentence) ? sentence[0].toLowerCase() + sentence.slice(1) : sentence;
}

/** Why a leg did not run, in the API's sentence (its first reason in the contract's order),
 * and the codes that sentence stands for; null when the API's sentences are not known. */
function why(leg, degraded, sentences) {
  const codes = leg.reasons.filter((code) => !ASKED.has(code));
  const first = degraded.reasons.find((code) => codes.includes(code) && sentences.has(code));
  return first ? { sentence: lowerFirst(sentences.get(first)), said: codes } : null;
}

/** The line saying which legs ran (`{element, said}`: `said`, the reason codes it says, for
 * the degraded note to leave out); null when no leg is named (a search past its budget). */
export function legsLine(legs, degraded, sentences) {
  const lexical = legs.find((l) => l.leg === "LEXICAL");
  const dense = legs.find((l) => l.leg === "DENSE");
  if (!lexical && !dense) return null;
  const meaning = dense ? `meaning (${modelName(dense.model)})` : "meaning";
  if (lexical?.ran && dense?.ran) return line(`Matched by words and by ${meaning}.`);
  if (lexical?.ran && !dense) {
    return line("Matched by words only: this account has no model that compares meaning.");
  }
  if (lexical?.ran) return lineWhy("Matched by words only", dense, degraded, sentences, `the search by ${meaning}`);
  if (dense?.ran) return lineWhy(`Matched by ${meaning} only`, lexical, degraded, sentences, "the search by words");
  return line("Matched neither by words nor by meaning: neither could run.");
}

/** "<lead>: <why the other leg did not run>", the API's sentence when known. */
function lineWhy(lead, other, degraded, sentences, otherName) {
  const reason = other ? why(other, degraded, sentences) : null;
  return line(`${lead}: ${reason?.sentence ?? `${otherName} did not run.`}`, reason?.said);
}

function line(sentence, said = []) {
  return { element: h("p", { class: "legs" }, sentence), said };
}
