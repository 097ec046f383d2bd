// Markdown parsed by markdown-it (vendored: vendor/README.md) with raw HTML off, its tokens
// turned here into elements and text nodes one by one: content is never parsed as HTML, so
// raw HTML in a turn shows as text and nothing in it runs. Links keep http(s) and mailto only;
// images show as links, never loaded. markdown-it parses in linear time, whatever the text.

import MarkdownIt from "./vendor/markdown_it/markdown-it.esm.min.mjs";

const MAX_CHARS = 50_000; // past this a turn shows as plain text
// Blocks nested this deep (19 quotes, or 10 lists) show the turn as plain text: past it
// markdown-it drops the rest. CommonMark's preset's bound; 100 (the default preset's) made a
// turn of 25,000 "![" take 6 times longer.
const MAX_NESTING = 20;
const SAFE_URL = /^(?:https?:\/\/|mailto:)/i;
const LANGUAGE = /^[\w+#.-]{1,30}$/;

// Chat text means its line breaks (breaks), and bare http(s) and mailto: addresses are links.
const parser = new MarkdownIt("default", {
  html: false,
  linkify: true,
  breaks: true,
  maxNesting: MAX_NESTING,
});
// Every destination parses as a link, so an unsafe one shows as its label (see `link`) rather
// than as the Markdown that wrote it.
parser.validateLink = () => true;
// Bare links with a scheme only: no bare domains or e-mail addresses, no ftp: or //.
parser.linkify.set({ fuzzyLink: false, fuzzyEmail: false, fuzzyIP: false });
parser.linkify.add("ftp:", null).add("//", null);

// Elements for markdown-it's opening tokens; the closing token of each ends it.
const CONTAINERS = {
  paragraph_open: () => el("p"),
  heading_open: (t) => el("p", `md-heading md-${t.tag}`), // kept out of the page's outline
  blockquote_open: () => el("blockquote"),
  bullet_list_open: () => el("ul"),
  ordered_list_open: orderedList,
  list_item_open: () => el("li"),
  table_open: () => el("table"),
  thead_open: () => el("thead"),
  tbody_open: () => el("tbody"),
  tr_open: () => el("tr"),
  th_open: () => el("th"),
  td_open: () => el("td"),
  em_open: () => el("em"),
  strong_open: () => el("strong"),
  s_open: () => el("del"),
  link_open: (t) => link(t.attrGet("href") ?? ""),
};

// Elements for markdown-it's tokens that stand alone.
const LEAVES = {
  text: (t) => document.createTextNode(t.content),
  code_inline: (t) => el("code", "", [t.content]),
  softbreak: () => el("br"), // chat text means its line breaks
  hardbreak: () => el("br"),
  hr: () => el("hr"),
  fence: codeBlock,
  code_block: codeBlock,
  image,
};

function el(tag, className, children = []) {
  const node = document.createElement(tag);
  if (className) node.className = className;
  for (const child of children) node.append(child);
  return node;
}

/** The rendered Markdown of `text`, as a <div class="markdown">. */
export function markdown(text) {
  const root = el("div", "markdown");
  const tokens = text.length > MAX_CHARS ? null : parser.parse(text, {});
  if (tokens === null || tokens.some((t) => t.nesting === 1 && t.level >= MAX_NESTING - 1)) {
    root.classList.add("markdown-plain");
    root.textContent = text;
    return root;
  }
  append(root, tokens);
  return root;
}

/** Appends the elements of `tokens` (markdown-it's, block or inline) to `root`. */
function append(root, tokens) {
  const open = [root];
  for (const token of tokens) {
    const parent = open.at(-1);
    if (token.hidden) {
      // A tight list's paragraphs: their text goes in the item itself.
    } else if (token.nesting === 1) {
      const node = (CONTAINERS[token.type] ?? (() => el("span")))(token);
      // A table scrolls in its own box rather than widen the turn.
      parent.append(token.type === "table_open" ? el("div", "md-table", [node]) : node);
      open.push(node);
    } else if (token.nesting === -1) {
      if (open.length > 1) open.pop();
    } else if (token.type === "inline") {
      append(parent, token.children ?? []);
    } else {
      // Anything else (html_inline or html_block, were they ever produced) is its own text.
      parent.append((LEAVES[token.type] ?? LEAVES.text)(token));
    }
  }
}

function orderedList(token) {
  const list = el("ol");
  const start = Number(token.attrGet("start") ?? 1);
  if (start !== 1) list.start = start;
  return list;
}

function codeBlock(token) {
  const language = token.info.trim().split(/\s/, 1)[0];
  const className = LANGUAGE.test(language) ? `language-${language}` : "";
  return el("pre", "", [el("code", className, [token.content.replace(/\n$/, "")])]);
}

/** A link to a safe `url`, or for any other scheme a span holding only its label. */
function link(url) {
  if (!SAFE_URL.test(url)) return el("span", "md-unsafe-link");
  const a = el("a");
  a.href = url;
  a.rel = "noopener noreferrer nofollow";
  return a;
}

/** Images are never loaded: an image shows as a link to it, labelled with its alt text. */
function image(token) {
  const label = link(token.attrGet("src") ?? "");
  label.append("image: ");
  append(label, token.children ?? []);
  return label;
}
