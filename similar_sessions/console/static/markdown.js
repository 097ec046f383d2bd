// A small Markdown renderer that only ever builds DOM nodes (createElement, text nodes):
// content is never parsed as HTML, so raw HTML in a turn shows as text and nothing in it runs.
// Covers what agents write: paragraphs, headings, emphasis, code spans and fences, lists,
// quotes, rules, simple tables and links. Links keep http(s) and mailto only.

const MAX_CHARS = 50_000; // past this a turn shows as plain text
const MAX_DEPTH = 8; // nested quotes and lists beyond this show as plain text
const SAFE_URL = /^(?:https?:\/\/|mailto:)/i;
const ESCAPABLE = "\\`*_{}[]()#+-.!|~<>\"'";

const FENCE = /^ {0,3}(`{3,}|~{3,})\s*([^`\s]*)[^`]*$/;
const HEADING = /^ {0,3}(#{1,6})(?:[ \t]+(.*?))?(?:[ \t]+#+)?[ \t]*$/;
const RULE = /^ {0,3}([-*_])(?:[ \t]*\1){2,}[ \t]*$/;
const QUOTE = /^ {0,3}> ?/;
const ITEM = /^( {0,12})([-*+]|\d{1,9}[.)])(?:[ \t]+(.*))?$/;
const TABLE_RULE = /^ {0,3}\|?[ \t]*:?-+:?[ \t]*(?:\|[ \t]*:?-+:?[ \t]*)*\|?[ \t]*$/;

function el(tag, className, children = []) {
  const node = document.createElement(tag);
  if (className) node.className = className;
  for (const child of children) node.append(child);
  return node;
}

/** The rendered Markdown of `text`, as a <div class="markdown">. */
export function markdown(text) {
  const root = el("div", "markdown");
  if (text.length > MAX_CHARS) {
    root.classList.add("markdown-plain");
    root.textContent = text;
    return root;
  }
  root.append(...blocks(text.replace(/\r\n?/g, "\n").split("\n"), 0));
  return root;
}

function blocks(lines, depth) {
  if (depth > MAX_DEPTH) return [el("p", "markdown-plain", [lines.join("\n")])];
  const out = [];
  let i = 0;
  while (i < lines.length) {
    const line = lines[i];
    if (!line.trim()) {
      i += 1;
      continue;
    }
    let m;
    if ((m = FENCE.exec(line))) {
      const close = new RegExp(`^ {0,3}${m[1][0] === "`" ? "`" : "~"}{${m[1].length},}\\s*$`);
      let end = i + 1;
      while (end < lines.length && !close.test(lines[end])) end += 1;
      const code = el("code", /^[\w+#.-]{1,30}$/.test(m[2]) ? `language-${m[2]}` : "", [
        lines.slice(i + 1, end).join("\n"),
      ]);
      out.push(el("pre", "", [code]));
      i = end + 1;
    } else if ((m = HEADING.exec(line))) {
      // Shown as a bold line, not a heading element: a turn's headings stay out of the page's outline.
      out.push(el("p", `md-heading md-h${m[1].length}`, inline(m[2] ?? "")));
      i += 1;
    } else if (RULE.test(line)) {
      out.push(el("hr"));
      i += 1;
    } else if (QUOTE.test(line)) {
      let end = i;
      while (end < lines.length && QUOTE.test(lines[end])) end += 1;
      const inner = lines.slice(i, end).map((l) => l.replace(QUOTE, ""));
      out.push(el("blockquote", "", blocks(inner, depth + 1)));
      i = end;
    } else if (ITEM.test(line)) {
      i = list(lines, i, depth, out);
    } else if (line.includes("|") && i + 1 < lines.length && TABLE_RULE.test(lines[i + 1])) {
      i = table(lines, i, out);
    } else {
      let end = i + 1;
      while (end < lines.length && lines[end].trim() && !startsBlock(lines[end])) end += 1;
      out.push(el("p", "", paragraph(lines.slice(i, end))));
      i = end;
    }
  }
  return out;
}

function startsBlock(line) {
  return FENCE.test(line) || HEADING.test(line) || RULE.test(line) || QUOTE.test(line) || ITEM.test(line);
}

function paragraph(lines) {
  // Chat text means its line breaks: each one is kept.
  const parts = [];
  lines.forEach((line, index) => {
    if (index > 0) parts.push(el("br"));
    parts.push(...inline(line.trim()));
  });
  return parts;
}

function list(lines, start, depth, out) {
  const first = ITEM.exec(lines[start]);
  const indent = first[1].length;
  const ordered = /\d/.test(first[2]);
  const node = el(ordered ? "ol" : "ul");
  if (ordered && Number.parseInt(first[2], 10) !== 1) node.start = Number.parseInt(first[2], 10);
  let i = start;
  while (i < lines.length) {
    const m = ITEM.exec(lines[i]);
    if (!m || m[1].length !== indent || /\d/.test(m[2]) !== ordered) break;
    const contentIndent = indent + m[2].length + 1;
    const body = [m[3] ?? ""];
    i += 1;
    while (i < lines.length) {
      const line = lines[i];
      const lead = line.length - line.trimStart().length;
      if (!line.trim()) {
        const next = lines[i + 1] ?? "";
        if (next.trim() && next.length - next.trimStart().length >= contentIndent) {
          body.push("");
          i += 1;
          continue;
        }
        break;
      }
      const item = ITEM.exec(line);
      if (lead < contentIndent && (item || startsBlock(line))) {
        if (!item || item[1].length <= indent) break;
      }
      body.push(line.slice(Math.min(lead, contentIndent)));
      i += 1;
    }
    const children = blocks(body, depth + 1);
    // A one-paragraph item shows its text without the paragraph's margins.
    const tight = children.length >= 1 && children[0].tagName === "P" && !children[0].className;
    node.append(el("li", "", tight ? [...children[0].childNodes, ...children.slice(1)] : children));
    while (i < lines.length && !lines[i].trim()) {
      const next = ITEM.exec(lines[i + 1] ?? "");
      if (!next || next[1].length !== indent) break;
      i += 1;
    }
  }
  out.push(node);
  return i;
}

function cells(line) {
  const trimmed = line.trim().replace(/^\|/, "").replace(/(?<!\\)\|$/, "");
  return trimmed.split(/(?<!\\)\|/).map((cell) => cell.trim().replaceAll("\\|", "|"));
}

function table(lines, start, out) {
  const head = cells(lines[start]);
  let end = start + 2;
  while (end < lines.length && lines[end].includes("|") && lines[end].trim()) end += 1;
  const row = (values, tag) => el("tr", "", head.map((_, n) => el(tag, "", inline(values[n] ?? ""))));
  const body = lines.slice(start + 2, end).map((line) => row(cells(line), "td"));
  out.push(
    el("div", "md-table", [
      el("table", "", [el("thead", "", [row(head, "th")]), el("tbody", "", body)]),
    ]),
  );
  return end;
}

function link(label, url) {
  if (!SAFE_URL.test(url)) return el("span", "md-unsafe-link", label);
  const a = el("a", "", label);
  a.href = url;
  a.rel = "noopener noreferrer nofollow";
  return a;
}

/** The closing bracket of the `[` at `open`, or -1. */
function closingBracket(text, open) {
  let level = 0;
  for (let j = open; j < text.length; j += 1) {
    const c = text[j];
    if (c === "\\") j += 1;
    else if (c === "[") level += 1;
    else if (c === "]" && --level === 0) return j;
  }
  return -1;
}

const DESTINATION = /^\(\s*<?([^\s<>()]*(?:\([^\s()]*\)[^\s<>()]*)*)>?(?:\s+("[^"]*"|'[^']*'))?\s*\)/;
const AUTOLINK = /^<((?:https?:\/\/|mailto:)[^\s<>]+)>/i;
const BARE_URL = /^https?:\/\/[^\s<>]*[^\s<>.,:;"')\]!?*_~]/i;

function inline(text, depth = 0) {
  if (depth > MAX_DEPTH) return [text];
  const out = [];
  let plain = "";
  const noCloser = new Set(); // delimiters already known to have no closer further on
  const flush = () => {
    if (plain) out.push(plain);
    plain = "";
  };
  let i = 0;
  while (i < text.length) {
    const c = text[i];
    const rest = text.slice(i);
    if (c === "\\" && ESCAPABLE.includes(text[i + 1] ?? "\n")) {
      plain += text[i + 1];
      i += 2;
      continue;
    }
    if (c === "`") {
      const run = /^`+/.exec(rest)[0];
      const close = noCloser.has(run) ? -1 : findRun(text, run, i + run.length);
      if (close < 0) {
        noCloser.add(run);
        plain += run;
        i += run.length;
        continue;
      }
      flush();
      let code = text.slice(i + run.length, close);
      if (/^ .*[^ ].* $/.test(code)) code = code.slice(1, -1);
      out.push(el("code", "", [code]));
      i = close + run.length;
      continue;
    }
    if (c === "[" || (c === "!" && text[i + 1] === "[")) {
      const open = c === "!" ? i + 1 : i;
      const close = noCloser.has("]") ? -1 : closingBracket(text, open);
      if (close < 0) noCloser.add("]");
      const target = close < 0 ? null : DESTINATION.exec(text.slice(close + 1));
      if (target) {
        flush();
        const label = inline(text.slice(open + 1, close), depth + 1);
        // Images are never loaded: an image shows as a link to it, labelled with its alt text.
        out.push(link(c === "!" ? ["image: ", ...label] : label, target[1]));
        i = close + 1 + target[0].length;
        continue;
      }
    }
    const auto = c === "<" ? AUTOLINK.exec(rest) : null;
    if (auto) {
      flush();
      out.push(link([auto[1]], auto[1]));
      i += auto[0].length;
      continue;
    }
    const bare = (c === "h" || c === "H") && !/\w/.test(text[i - 1] ?? "") ? BARE_URL.exec(rest) : null;
    if (bare) {
      flush();
      out.push(link([bare[0]], bare[0]));
      i += bare[0].length;
      continue;
    }
    if (c === "*" || c === "_" || c === "~") {
      const run = new RegExp(`^\\${c}+`).exec(rest)[0];
      const size = c === "~" ? (run.length === 2 ? 2 : 0) : Math.min(run.length, 3);
      const delimiter = c.repeat(size);
      const opens = size > 0 && /\S/.test(text[i + size] ?? "") && (c !== "_" || !/\w/.test(text[i - 1] ?? ""));
      const close = opens && !noCloser.has(delimiter) ? findCloser(text, delimiter, i + size) : -1;
      if (opens && close < 0) noCloser.add(delimiter);
      if (close > i + size) {
        flush();
        const inner = inline(text.slice(i + size, close), depth + 1);
        if (c === "~") out.push(el("del", "", inner));
        else if (size === 3) out.push(el("strong", "", [el("em", "", inner)]));
        else out.push(el(size === 2 ? "strong" : "em", "", inner));
        i = close + size;
        continue;
      }
      plain += run;
      i += run.length;
      continue;
    }
    plain += c;
    i += 1;
  }
  flush();
  return out;
}

/** The next backtick run exactly as long as `run`, from `from`, or -1. */
function findRun(text, run, from) {
  let at = text.indexOf(run, from);
  while (at >= 0) {
    let end = at + run.length;
    if (text[end] !== "`" && text[at - 1] !== "`") return at;
    while (text[end] === "`") end += 1;
    at = text.indexOf(run, end);
  }
  return -1;
}

/** The next closing `delimiter` (after a non-space; for `_` not inside a word), or -1. */
function findCloser(text, delimiter, from) {
  let at = text.indexOf(delimiter, from);
  while (at >= 0) {
    const after = text[at + delimiter.length] ?? "";
    const single = delimiter.length === 1 && after === delimiter;
    const wordy = delimiter[0] === "_" && /\w/.test(after);
    if (/\S/.test(text[at - 1]) && !single && !wordy) return at;
    at = text.indexOf(delimiter, at + (single ? 2 : 1));
  }
  return -1;
}
