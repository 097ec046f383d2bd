// A tiny element builder: text always goes in as text, never as markup.

export function h(tag, attrs = {}, ...children) {
  const el = document.createElement(tag);
  for (const [name, value] of Object.entries(attrs)) {
    if (value === null || value === undefined || value === false) continue;
    if (name.startsWith("on") && typeof value === "function") {
      el.addEventListener(name.slice(2), value);
    } else if (value === true) {
      el.setAttribute(name, "");
    } else {
      el.setAttribute(name, String(value));
    }
  }
  append(el, children);
  return el;
}

function append(el, children) {
  for (const child of children) {
    if (child === null || child === undefined || child === false) continue;
    if (Array.isArray(child)) append(el, child);
    else el.append(child instanceof Node ? child : String(child));
  }
}

const dateTime = new Intl.DateTimeFormat(undefined, { dateStyle: "medium", timeStyle: "short" });
const timeOnly = new Intl.DateTimeFormat(undefined, { timeStyle: "short" });

/** A <time> element showing an ISO 8601 instant in the reader's locale. */
export function time(iso, { short = false } = {}) {
  const when = new Date(iso);
  const shown = Number.isNaN(when.getTime()) ? iso : (short ? timeOnly : dateTime).format(when);
  return h("time", { datetime: iso }, shown);
}

/** The console's own address for one session. */
export function sessionHref(sessionId) {
  return `/console/runtime-sessions?${new URLSearchParams({ sessionId })}`;
}

export function plural(count, one, many = `${one}s`) {
  return `${count.toLocaleString()} ${count === 1 ? one : many}`;
}

/**
 * Runs `change` (which redraws part of the page) keeping the reader's place: the element at
 * the top of the view stays where it was on the screen, whatever grew or shrank above it
 * (browsers without scroll anchoring would move it; where the browser kept it, nothing moves).
 */
export function keepingPlace(change) {
  const view = document.getElementById("view") ?? document.body;
  const anchor = document.elementFromPoint(view.getBoundingClientRect().left + 4, 4);
  const kept = anchor && view.contains(anchor) && anchor !== view ? anchor : null;
  const before = kept?.getBoundingClientRect().top;
  const result = change();
  if (kept?.isConnected) {
    const moved = kept.getBoundingClientRect().top - before;
    if (Math.abs(moved) >= 0.5) window.scrollBy(0, moved);
  }
  return result;
}
