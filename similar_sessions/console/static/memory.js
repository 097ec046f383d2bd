// What a page remembers across Back and reload: the Similar sessions panel open or closed (in
// the address and the history entry) and its status filter (in the address), the scroll
// position and the replay steps shown (in the history entry), and the operator's "always
// open" preference (in this browser).

const ALWAYS_OPEN = "similar-sessions.similar-always-open";
const FEATURES = "similar-sessions.viewer-features";
const PANEL_PARAM = "similar";
const STATUS_PARAM = "similarStatus";
const SAVE_DELAY_MS = 250;

function entry() {
  const state = window.history.state;
  return state && typeof state === "object" ? state : {};
}

/** Merges `patch` into this history entry's state, without a new entry. */
export function remember(patch, url = window.location.href) {
  window.history.replaceState({ ...entry(), ...patch }, "", url);
}

export function remembered(name) {
  return entry()[name];
}

/** The operator's preference "always open the Similar sessions panel", kept in this browser. */
export const alwaysOpen = {
  get() {
    try {
      return window.localStorage.getItem(ALWAYS_OPEN) === "true";
    } catch {
      return false;
    }
  },
  set(value) {
    try {
      if (value) window.localStorage.setItem(ALWAYS_OPEN, "true");
      else window.localStorage.removeItem(ALWAYS_OPEN);
    } catch {
      // Storage may be off; the preference then lasts as long as the page.
    }
  },
};

/** Whether the panel is to be shown on landing: this entry's last state (Back, reload), else
 * the address (a link that opens it), else the operator's preference. */
export function panelWanted() {
  const last = remembered("similarOpen");
  if (typeof last === "boolean") return last;
  const asked = new URLSearchParams(window.location.search).get(PANEL_PARAM);
  if (asked === "open") return true;
  if (asked === "closed") return false;
  return alwaysOpen.get();
}

/** Records the panel's state in this entry and its address (so a copied link keeps it). */
export function rememberPanel(open) {
  const url = new URL(window.location.href);
  if (open) url.searchParams.set(PANEL_PARAM, "open");
  else if (alwaysOpen.get()) url.searchParams.set(PANEL_PARAM, "closed");
  else url.searchParams.delete(PANEL_PARAM);
  remember({ similarOpen: open }, url.href);
}

/** The status the neighbours are filtered by, from the address; null for any status. */
export function neighbourStatus() {
  return new URLSearchParams(window.location.search).get(STATUS_PARAM)?.trim() || null;
}

/** Records the neighbours' status filter in the address (so a copied link keeps it). */
export function rememberNeighbourStatus(status) {
  const url = new URL(window.location.href);
  if (status) url.searchParams.set(STATUS_PARAM, status);
  else url.searchParams.delete(STATUS_PARAM);
  remember({}, url.href);
}

/** The viewer's features as last seen in this tab, or null before the first answer. */
export const knownFeatures = {
  get() {
    try {
      const value = JSON.parse(window.sessionStorage.getItem(FEATURES) ?? "null");
      return Array.isArray(value) ? value : null;
    } catch {
      return null;
    }
  },
  set(features) {
    window.sessionStorage.setItem(FEATURES, JSON.stringify(features));
  },
  clear() {
    window.sessionStorage.removeItem(FEATURES);
  },
};

let saving = null;

/** Keeps the scroll position in the history entry, so Back returns to it. */
export function keepScrollPosition() {
  window.history.scrollRestoration = "manual";
  const save = () => {
    window.clearTimeout(saving);
    saving = null;
    remember({ scrollY: Math.round(window.scrollY) });
  };
  window.addEventListener("scroll", () => {
    if (saving === null) saving = window.setTimeout(save, SAVE_DELAY_MS);
  }, { passive: true });
  window.addEventListener("pagehide", save);
  // A click on a link leaves before the timer fires: save first.
  document.addEventListener("click", (event) => {
    if (event.target instanceof Element && event.target.closest("a[href]")) save();
  }, { capture: true });
}

/** Scrolls back to where this entry was left; false when it holds no position. */
export function restoreScrollPosition() {
  const y = remembered("scrollY");
  if (typeof y !== "number") return false;
  window.scrollTo(0, y);
  return true;
}
