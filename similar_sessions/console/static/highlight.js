// The words of a passage that a search's text matched, or the terms a match shares, marked:
// text nodes and <mark> elements only, so nothing in the passage is ever parsed as markup.

import { h } from "./dom.js";

// A word as the server splits a passage to find its matched words: letters, digits and "_"
// (PostgreSQL's [[:alnum:]_]); anything else is between words.
const WORD = /[\p{L}\p{N}_]+/gu;

/** `text` as nodes, every occurrence of `words` (lowercased, as the API answers them) marked,
 * case-insensitively and only as whole words. */
export function highlighted(text, words = []) {
  const wanted = new Set(words.map((w) => w.toLowerCase()));
  if (wanted.size === 0) return [document.createTextNode(text)];
  const nodes = [];
  let shown = 0;
  for (const found of text.matchAll(WORD)) {
    if (!wanted.has(found[0].toLowerCase())) continue;
    if (found.index > shown) nodes.push(document.createTextNode(text.slice(shown, found.index)));
    nodes.push(h("mark", {}, found[0]));
    shown = found.index + found[0].length;
  }
  if (shown < text.length) nodes.push(document.createTextNode(text.slice(shown)));
  return nodes;
}

// Letters, marks, digits and underscores: what the lexical model's words are made of.
const WORD_CHAR = "[\\p{L}\\p{M}\\p{N}_]";
// Scripts written without spaces: their terms are pairs of characters found anywhere.
const UNSPACED = /[\p{Script=Han}\p{Script=Hiragana}\p{Script=Katakana}\p{Script=Thai}\p{Script=Lao}\p{Script=Khmer}\p{Script=Myanmar}]/u;

function escaped(term) {
  return term.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
}

/** `text` as nodes, each of a match's shared terms marked: whole words, in any case (the
 * lexical model reads casefolded words), or anywhere for a pair of an unspaced script. */
export function termsMarked(text, terms = []) {
  const shown = (terms ?? []).filter((t) => typeof t === "string" && t.length > 0);
  if (shown.length === 0) return [document.createTextNode(text)];
  const alternatives = [...shown]
    .sort((a, b) => b.length - a.length)
    .map((t) => (UNSPACED.test(t) ? escaped(t) : `(?<!${WORD_CHAR})${escaped(t)}(?!${WORD_CHAR})`));
  const pattern = new RegExp(alternatives.join("|"), "giu");
  const nodes = [];
  let shownTo = 0;
  for (const found of text.matchAll(pattern)) {
    if (found[0].length === 0) continue;
    if (found.index > shownTo) nodes.push(document.createTextNode(text.slice(shownTo, found.index)));
    nodes.push(h("mark", {}, found[0]));
    shownTo = found.index + found[0].length;
  }
  if (shownTo < text.length) nodes.push(document.createTextNode(text.slice(shownTo)));
  return nodes;
}
