// The one way the console talks to the server: POST /graphql with the operator's key.

import { plural } from "./dom.js";

const KEY_NAME = "similar-sessions.api-key";

/** The API key lives in this tab's sessionStorage only: never in the URL, never logged. */
export const apiKey = {
  get() {
    return window.sessionStorage.getItem(KEY_NAME);
  },
  set(key) {
    window.sessionStorage.setItem(KEY_NAME, key);
  },
  clear() {
    window.sessionStorage.removeItem(KEY_NAME);
  },
};

/** The server refused the key (401). */
export class Unauthorized extends Error {}

/** The key is valid but lacks the scope to view sessions (403). */
export class Forbidden extends Error {}

/** Anything else that kept an answer from arriving; `message` is a sentence for people. */
export class RequestFailed extends Error {}

/** The answer's data; any GraphQL error is thrown as RequestFailed. */
export async function graphql(query, variables = {}, key = apiKey.get()) {
  const { data, errors } = await graphqlPartial(query, variables, key);
  if (errors.length > 0) throw new RequestFailed(refusal(errors));
  return data;
}

/** A sentence for people about GraphQL errors. */
export function refusal(errors) {
  const input = errors.find((e) => e.extensions?.code === "BAD_USER_INPUT");
  if (input) return `The request was refused: ${input.message}`;
  const limit = errors.find((e) => e.extensions?.code === "LIMIT_EXCEEDED");
  if (limit) return `The request asked for more than the server allows (${limit.message}).`;
  if (errors.some((e) => e.extensions?.code === "UNAVAILABLE")) {
    return "The database is unavailable right now.";
  }
  return "The server could not answer this request.";
}

/** `{data, errors}`: the parts that were answered, and the errors of those that were not. */
export async function graphqlPartial(query, variables = {}, key = apiKey.get()) {
  let response;
  try {
    response = await fetch("/graphql", {
      method: "POST",
      headers: {
        "content-type": "application/json",
        accept: "application/json",
        authorization: `Bearer ${key ?? ""}`,
      },
      body: JSON.stringify({ query, variables }),
      credentials: "omit",
      cache: "no-store",
    });
  } catch {
    throw new RequestFailed("The server could not be reached. Check your connection.");
  }
  if (response.status === 401) throw new Unauthorized("The API key was not accepted.");
  if (response.status === 403) {
    throw new Forbidden("This API key lacks the view_runtime_sessions scope.");
  }
  if (response.status === 429) {
    // Past the key's rate: Retry-After says when the next request is let through.
    const seconds = Number.parseInt(response.headers.get("retry-after") ?? "", 10);
    const when = Number.isFinite(seconds) ? `in ${plural(seconds, "second")}` : "shortly";
    throw new RequestFailed(`This API key sent too many requests; try again ${when}.`);
  }
  if (response.status === 503) {
    throw new RequestFailed("The database is unavailable right now.");
  }
  if (!response.ok) {
    throw new RequestFailed(`The server answered with an error (HTTP ${response.status}).`);
  }
  let body;
  try {
    body = await response.json();
  } catch {
    throw new RequestFailed("The server sent an answer the console could not read.");
  }
  const errors = Array.isArray(body.errors) ? body.errors : [];
  if (!body.data) throw new RequestFailed(refusal(errors));
  return { data: body.data, errors };
}
