// A running session's page keeps up with it: every few seconds, while the tab is shown, it asks
// the session's status and the turns after the last one shown (ConsoleLiveSession), appends
// them to the replay without touching what is shown, and asks the panel's neighbours again once
// the indexer has had time to take the new turns. It stops when the session stops running (the
// header then says so, once), when the page is left, or when the key is refused.

import { Unauthorized, graphql } from "./api.js";
import { h, keepingPlace, plural } from "./dom.js";
import { LIVE_SESSION, REPLAY_PAGE } from "./queries.js";
import { refreshSessionHeader } from "./sessions.js";

export const LIVE_INTERVAL_MS = 3000;
const MAX_DELAY_MS = 60000;
// Neighbours are asked again a poll after new turns came (the indexer takes them within
// seconds), and every this many polls besides (a session not yet embedded when the page opened).
const NEIGHBOURS_EVERY = 10;
const RUNNING = "running";
const LIVE = "Live: new steps and similar sessions appear here as they arrive.";

/**
 * Follows `session` (as the page's request answered it) while it runs: `header` is its header
 * (its status and last activity are redrawn), `replay` its replayView, `panel` the Similar
 * sessions panel (or null); `onUnauthorized` is told when the key is no longer accepted.
 */
export function followRunning(
  session,
  { header, replay, panel, onUnauthorized, interval = LIVE_INTERVAL_MS },
) {
  if (session.status !== RUNNING) return;
  const note = h("p", { class: "live-note", role: "status" }, LIVE);
  header.append(note);
  let timer = null;
  let asking = false;
  let stopped = false;
  let delay = interval;
  let polls = 0;
  let neighboursDue = false;

  // A line of the header that changed, which may change its height above the replay.
  function say(text) {
    keepingPlace(() => {
      note.textContent = text;
    });
  }

  function schedule(ms) {
    window.clearTimeout(timer);
    timer = stopped ? null : window.setTimeout(tick, ms);
  }

  function stop() {
    stopped = true;
    window.clearTimeout(timer);
    timer = null;
    document.removeEventListener("visibilitychange", onVisibility);
    window.removeEventListener("pagehide", onPageHide);
  }

  // A hidden tab asks nothing; shown again, it catches up at once.
  function onVisibility() {
    if (!header.isConnected) stop();
    else if (document.visibilityState === "hidden") window.clearTimeout(timer);
    else if (!asking) schedule(0);
  }

  function onPageHide(event) {
    if (event.persisted) window.clearTimeout(timer); // kept for Back: resumed when shown
    else stop();
  }

  async function tick() {
    timer = null;
    if (stopped || !header.isConnected) {
      stop();
      return;
    }
    if (document.visibilityState === "hidden") return;
    const { after, atEnd } = replay.tail();
    let now;
    asking = true;
    try {
      const data = await graphql(LIVE_SESSION, { id: session.id, first: REPLAY_PAGE, after, atEnd });
      now = data.runtimeSession;
    } catch (error) {
      if (error instanceof Unauthorized) {
        stop();
        onUnauthorized?.();
        return;
      }
      delay = Math.min(delay * 2, MAX_DELAY_MS);
      const wait = plural(Math.round(delay / 1000), "second");
      say(`Live updates paused: ${error.message || "the server did not answer."} Trying again in ${wait}.`);
      schedule(delay);
      return;
    } finally {
      asking = false;
    }
    if (stopped || !header.isConnected) {
      stop();
      return;
    }
    if (!now) {
      stop();
      say("This session is no longer available.");
      return;
    }
    delay = interval;

    polls += 1;
    // New turns go below the ones shown; the header above them may change height.
    const grown = keepingPlace(() => {
      refreshSessionHeader(header, now);
      const news = now.status === RUNNING ? LIVE : ended(now.status);
      if (note.textContent !== news) note.textContent = news;
      return atEnd && now.replayPage ? replay.grow(now.replayPage, after) : 0;
    });
    if (now.status !== RUNNING) {
      stop();
      // Its last turns reach the neighbours once the indexer has taken them.
      const last = () => header.isConnected && panel.refresh({ sessionStatus: now.status });
      if (panel) window.setTimeout(last, interval);
      return;
    }
    if (panel && (neighboursDue || polls % NEIGHBOURS_EVERY === 0)) panel.refresh();
    neighboursDue = grown > 0;
    schedule(interval);
  }

  document.addEventListener("visibilitychange", onVisibility);
  window.addEventListener("pagehide", onPageHide);
  schedule(interval);
}

function ended(status) {
  if (status === "completed") return "This session has completed.";
  return `This session has stopped running (${status.replaceAll("_", " ")}).`;
}
