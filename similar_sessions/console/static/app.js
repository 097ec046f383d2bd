// The console's entry point: sign-in, then the sessions list (or a search) or one session.

import { fetchAlerts, renderAlerts, wantsAlerts } from "./alerts.js";
import { Forbidden, RequestFailed, Unauthorized, apiKey, graphql, graphqlPartial, refusal } from "./api.js";
import { h, sessionHref } from "./dom.js";
import { followRunning } from "./live.js";
import {
  keepScrollPosition,
  knownFeatures,
  neighbourStatus,
  panelWanted,
  remember,
  rememberPanel,
  remembered,
  restoreScrollPosition,
} from "./memory.js";
import {
  MATCHES_PER_SESSION,
  PAGE_SIZE,
  REPLAY,
  REPLAY_PAGE,
  REPLAY_SEEK_PAGE,
  SESSION,
  SESSION_LIST,
  SESSION_WITH_SIMILAR,
  SIMILAR_LIMIT,
  TITLE_SEARCH_MAX,
} from "./queries.js";
import { ANCHOR, replayView } from "./replay.js";
import { describedSearch } from "./search.js";
import { renderSearch, renderSessionHeader, renderSessionList } from "./sessions.js";
import { forgetSimilarSessions, similarErrors, similarPanel } from "./similar.js";
import {
  failureChoice,
  failureGroupSection,
  fetchFailureModes,
  groupAsked,
  renderFailureModes,
  wantsFailureModes,
} from "./failures.js";

const FEATURE = "similarSessions";
const UUID_PATTERN = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
const LIST = "/console/runtime-sessions";

const view = document.getElementById("view");
const signIn = document.getElementById("sign-in");
const signInForm = document.getElementById("sign-in-form");
const keyInput = document.getElementById("api-key");
const signInError = document.getElementById("sign-in-error");
const signInButton = signInForm.querySelector("button[type=submit]");
const account = document.getElementById("account");
const accountName = document.getElementById("account-name");
const searchForm = document.getElementById("search");
const searchInput = document.getElementById("search-input");
const failureModesLink = document.getElementById("failure-modes-link");
const alertsLink = document.getElementById("alerts-link");

function showSignIn(message = "", { invalid = Boolean(message) } = {}) {
  apiKey.clear();
  knownFeatures.clear();
  forgetSimilarSessions();
  document.title = "Sign in · Runtime sessions";
  view.replaceChildren();
  account.hidden = true;
  searchForm.hidden = true;
  failureModesLink.hidden = true;
  alertsLink.hidden = true;
  signIn.hidden = false;
  signInError.textContent = message;
  keyInput.setAttribute("aria-invalid", String(invalid));
  keyInput.focus();
}

function showView(viewer, children) {
  signIn.hidden = true;
  signInError.textContent = "";
  account.hidden = false;
  searchForm.hidden = false;
  accountName.textContent = viewer.name;
  knownFeatures.set(viewer.features);
  failureModesLink.hidden = !viewer.features.includes(FEATURE);
  alertsLink.hidden = !viewer.features.includes(FEATURE);
  if (wantsAlerts(new URLSearchParams(window.location.search))) {
    alertsLink.setAttribute("aria-current", "page");
  } else alertsLink.removeAttribute("aria-current");
  const onFailureModes = wantsFailureModes(new URLSearchParams(window.location.search));
  if (onFailureModes) failureModesLink.setAttribute("aria-current", "page");
  else failureModesLink.removeAttribute("aria-current");
  view.replaceChildren(...children);
  const heading = view.querySelector("h1");
  document.title = `${heading?.textContent ?? "Console"} · Runtime sessions`;
  heading?.focus({ preventScroll: true });
}

function showProblem(sentence) {
  signIn.hidden = true;
  view.replaceChildren(
    h(
      "div",
      { class: "problem", role: "alert" },
      h("p", {}, sentence),
      h("button", { type: "button", class: "button", onclick: () => route() }, "Retry"),
    ),
  );
}

/** What the address asks for, loaded with `key`: [viewer, children, then?]; throws
 * Unauthorized / Forbidden / RequestFailed. `then` runs once the children are shown. */
async function load(key) {
  window.onhashchange = null;
  const params = new URLSearchParams(window.location.search);
  const sessionId = params.get("sessionId");
  if (sessionId !== null) {
    if (!UUID_PATTERN.test(sessionId)) {
      const data = await graphql(SESSION_LIST, { first: 1, after: null }, key);
      return [data.viewer, notFound("That is not a session id.")];
    }
    return loadSession(key, sessionId);
  }
  if (wantsAlerts(params)) {
    const [viewer, answer] = await fetchAlerts(key);
    return [viewer, renderAlerts(answer)];
  }
  const after = params.get("after");
  if (wantsFailureModes(params)) {
    const choice = failureChoice(params);
    const [viewer, answer] = await fetchFailureModes(key, choice, after);
    return [viewer, renderFailureModes(answer, choice, after), restoreScrollPosition];
  }
  const search = params.get("q")?.trim() || null;
  searchInput.value = search ?? "";
  if (search) return loadSearch(key, search, after);
  const data = await graphql(SESSION_LIST, { first: PAGE_SIZE, after, search }, key);
  const list = renderSessionList(data.runtimeSessions, { isFirstPage: after === null });
  return [data.viewer, list, restoreScrollPosition];
}

/** A search's first page asks two things at once: the titles and source ids that contain the
 * text, and the sessions that went like it (which embeds the text, so may take longer). */
async function loadSearch(key, search, after) {
  const isFirstPage = after === null;
  const describe = () =>
    describedSearch(search, {
      key,
      onUnauthorized: () => showSignIn("Your API key is no longer accepted. Sign in again."),
    });
  // Features are known after the tab's first answer; until then the second request waits.
  let described = isFirstPage && knownFeatures.get()?.includes(FEATURE) ? describe() : null;
  const byTitle = search.length <= TITLE_SEARCH_MAX;
  const data = byTitle
    ? await graphql(SESSION_LIST, { first: PAGE_SIZE, after, search }, key)
    : await graphql(SESSION_LIST, { first: 1, after: null, search: null }, key);
  const featured = data.viewer.features.includes(FEATURE);
  if (!featured) described = null;
  else if (isFirstPage && !described) described = describe();
  const page = renderSearch(byTitle ? data.runtimeSessions : null, { isFirstPage, search, described });
  return [data.viewer, page, restoreScrollPosition];
}

function notFound(sentence) {
  return [
    h("h1", { tabindex: "-1" }, "Session not found"),
    h("p", {}, sentence, " ", h("a", { href: LIST }, "Back to all sessions"), "."),
  ];
}

/** One session: with the panel to be shown, its neighbours come in the same request. */
async function loadSession(key, sessionId) {
  const features = knownFeatures.get();
  const withSimilar = panelWanted() && (features === null || features.includes(FEATURE));
  const filter = neighbourStatus();
  const variables = { id: sessionId, first: REPLAY_PAGE };
  // Opened from a failure mode's card: its group's members are asked beside the page's request.
  const group = groupAsked(new URLSearchParams(window.location.search));
  const groupSection =
    group && (features === null || features.includes(FEATURE))
      ? failureGroupSection(sessionId, group, {
          onUnauthorized: () => showSignIn("Your API key is no longer accepted. Sign in again."),
        })
      : null;
  const { data, errors } = withSimilar
    ? await graphqlPartial(
        SESSION_WITH_SIMILAR,
        {
          ...variables,
          limit: SIMILAR_LIMIT,
          maxMatches: MATCHES_PER_SESSION,
          status: filter ? [filter] : null,
        },
        key,
      )
    : await graphqlPartial(SESSION, variables, key);
  // Only the neighbours, or their timeline alone, may fail: both fields are nullable, so an
  // error nulls that part and the rest of the page comes; the panel offers a Retry.
  const failed = similarErrors(errors);
  if (failed.rest.length || !data.viewer) throw new RequestFailed(refusal(failed.rest));
  const session = data.runtimeSession;
  if (!session) return [data.viewer, notFound("No session with this id in your account.")];
  return sessionPage(data.viewer, session, {
    withSimilar,
    filter,
    similarError: failed.similar.length ? refusal(failed.similar) : null,
    timelineError: failed.timeline.length ? refusal(failed.timeline) : null,
    groupSection,
  });
}

function sessionPage(viewer, session, { withSimilar, filter, similarError, timelineError, groupSection }) {
  const replay = replayView(session.replayPage, {
    pageSize: REPLAY_PAGE,
    seekSize: REPLAY_SEEK_PAGE,
    fetchPage: async (after, first) => {
      const data = await graphql(REPLAY, { id: session.id, first, after });
      if (!data.runtimeSession) throw new RequestFailed("This session is no longer available.");
      return data.runtimeSession.replayPage;
    },
    onShown: (shown) => {
      if (shown > REPLAY_PAGE) remember({ replayShown: shown });
    },
    onProblem: (error) => {
      if (error instanceof Unauthorized) showSignIn("Your API key is no longer accepted. Sign in again.");
    },
  });
  const header = renderSessionHeader(session);
  const parts = [header];
  const withPanel = viewer.features.includes(FEATURE);
  if (groupSection && withPanel) header.append(groupSection);
  const panel = withPanel
    ? similarPanel(session.id, {
        open: withSimilar,
        answer: withSimilar ? session.similarSessions : null,
        error: similarError,
        timelineError,
        filter,
        sessionStatus: session.status,
        onToggle: rememberPanel,
        onUnauthorized: () => showSignIn("Your API key is no longer accepted. Sign in again."),
      })
    : null;
  if (panel) parts.push(panel.element);
  parts.push(replay.element);

  async function land() {
    const shown = remembered("replayShown");
    if (typeof shown === "number") await replay.showAtLeast(shown);
    const anchor = ANCHOR.exec(window.location.hash);
    // Back returns to where the operator was; a fresh link lands on its step.
    const restored = restoreScrollPosition();
    if (anchor) await replay.reveal(anchor[1], { scroll: !restored });
    // A running session's replay and neighbours keep up with it while the page is shown.
    followRunning(session, {
      header,
      replay,
      panel,
      onUnauthorized: () => showSignIn("Your API key is no longer accepted. Sign in again."),
    });
  }
  window.onhashchange = () => {
    const anchor = ANCHOR.exec(window.location.hash);
    remember({ similarOpen: panelOpen(), replayShown: replay.shown() });
    if (anchor) replay.reveal(anchor[1]);
  };
  const layout = h("div", { class: `session-layout${withPanel ? " with-panel" : ""}` }, parts);
  return [viewer, [layout], land];
}

function panelOpen() {
  return document.getElementById("similar-toggle")?.getAttribute("aria-expanded") === "true";
}

async function route(key = apiKey.get(), { signingIn = false } = {}) {
  if (!key) {
    showSignIn();
    return;
  }
  view.setAttribute("aria-busy", "true");
  if (!view.hasChildNodes()) view.replaceChildren(h("p", { class: "loading" }, "Loading…"));
  signInButton.disabled = true;
  try {
    const [viewer, children, then] = await load(key);
    if (signingIn) {
      apiKey.set(key);
      keyInput.value = "";
    }
    showView(viewer, children);
    await then?.();
  } catch (error) {
    if (error instanceof Unauthorized) {
      showSignIn(
        signingIn
          ? "That API key was not accepted. Check it and try again."
          : "Your API key is no longer accepted. Sign in again.",
      );
    } else if (error instanceof Forbidden) {
      showSignIn("That API key lacks the view_runtime_sessions scope.");
    } else if (error instanceof RequestFailed) {
      if (signingIn) {
        view.replaceChildren();
        signInError.textContent = `${error.message} Try again.`;
      } else {
        showProblem(`The console could not load this page. ${error.message}`);
      }
    } else {
      showProblem("The console ran into an unexpected problem.");
      throw error;
    }
  } finally {
    view.removeAttribute("aria-busy");
    signInButton.disabled = false;
  }
}

signInForm.addEventListener("submit", (event) => {
  event.preventDefault();
  const key = keyInput.value.trim();
  if (!key) {
    signInError.textContent = "Enter an API key.";
    keyInput.setAttribute("aria-invalid", "true");
    keyInput.focus();
    return;
  }
  signInError.textContent = "";
  route(key, { signingIn: true });
});

// A session id goes straight to its session; any other text searches titles and source ids.
searchForm.addEventListener("submit", (event) => {
  event.preventDefault();
  const text = searchInput.value.trim();
  if (UUID_PATTERN.test(text)) window.location.assign(sessionHref(text.toLowerCase()));
  else window.location.assign(text ? `${LIST}?${new URLSearchParams({ q: text })}` : LIST);
});

// "/" reaches the search box from anywhere but a text field, as on many sites.
document.addEventListener("keydown", (event) => {
  const typing = event.target instanceof Element && event.target.closest("input, textarea, select, [contenteditable]");
  if (event.key === "/" && !typing && !searchForm.hidden && !event.ctrlKey && !event.metaKey && !event.altKey) {
    event.preventDefault();
    searchInput.focus();
  }
});

document.getElementById("sign-out").addEventListener("click", () => {
  showSignIn("You are signed out.", { invalid: false });
});

keepScrollPosition();
route();
