// The words of a passage that a search's text matched, marked: text nodes and <mark> elements
// only, so nothing in the passage is ever parsed as markup.

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
