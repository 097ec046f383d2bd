// The console's entry point: sign-in, then the sessions list or one session.

import { Forbidden, RequestFailed, Unauthorized, apiKey, graphql } from "./api.js";
import { h } from "./dom.js";
import { PAGE_SIZE, SESSION, SESSION_LIST } from "./queries.js";
import { renderReplay, renderSessionHeader, renderSessionList } from "./sessions.js";
import { forgetSimilarSessions, similarPanel } from "./similar.js";

const FEATURE = "similarSessions";
const UUID_PATTERN = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

const view = document.getElementById("view");
const signIn = document.getElementById("sign-in");
const signInForm = document.getElementById("sign-in-form");
const keyInput = document.getElementById("api-key");
const signInError = document.getElementById("sign-in-error");
const signInButton = signInForm.querySelector("button[type=submit]");
const account = document.getElementById("account");
const accountName = document.getElementById("account-name");

function showSignIn(message = "", { invalid = Boolean(message) } = {}) {
  apiKey.clear();
  forgetSimilarSessions();
  document.title = "Sign in · Runtime sessions";
  view.replaceChildren();
  account.hidden = true;
  signIn.hidden = false;
  signInError.textContent = message;
  keyInput.setAttribute("aria-invalid", String(invalid));
  keyInput.focus();
}

function showView(viewer, children) {
  signIn.hidden = true;
  signInError.textContent = "";
  account.hidden = false;
  accountName.textContent = viewer.name;
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

/** Loads what the address asks for with `key`; throws Unauthorized / Forbidden / RequestFailed. */
async function load(key) {
  const params = new URLSearchParams(window.location.search);
  const sessionId = params.get("sessionId");
  if (sessionId !== null) {
    if (!UUID_PATTERN.test(sessionId)) {
      const data = await graphql(SESSION_LIST, { first: 1, after: null }, key);
      return [data.viewer, notFound("That is not a session id.")];
    }
    const data = await graphql(SESSION, { id: sessionId }, key);
    const session = data.runtimeSession;
    if (!session) return [data.viewer, notFound("No session with this id in your account.")];
    return [data.viewer, sessionPage(data.viewer, session)];
  }
  const after = params.get("after");
  const data = await graphql(SESSION_LIST, { first: PAGE_SIZE, after }, key);
  return [data.viewer, renderSessionList(data.runtimeSessions, { isFirstPage: after === null })];
}

function notFound(sentence) {
  return [
    h("h1", { tabindex: "-1" }, "Session not found"),
    h("p", {}, sentence, " ", h("a", { href: "/console/runtime-sessions" }, "Back to all sessions"), "."),
  ];
}

function sessionPage(viewer, session) {
  const parts = [renderSessionHeader(session), renderReplay(session.replay)];
  if (viewer.features.includes(FEATURE)) {
    parts.push(
      similarPanel(session.id, {
        replayIds: new Set(session.replay.map((e) => e.id)),
        onUnauthorized: () => showSignIn("Your API key is no longer accepted. Sign in again."),
      }),
    );
  }
  return parts;
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
    const [viewer, children] = await load(key);
    if (signingIn) {
      apiKey.set(key);
      keyInput.value = "";
    }
    showView(viewer, children);
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

document.getElementById("sign-out").addEventListener("click", () => {
  showSignIn("You are signed out.", { invalid: false });
});

route();
