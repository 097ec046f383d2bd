// Starts GraphiQL (vendored, see vendor/README.md) against this server's /graphql.
"use strict";

(function start() {
  const NAMESPACE = "graphiql:";
  const HEADERS = /^graphiql:(?:headers|shouldPersistHeaders)$/;

  // Headers carry the API key, so they are never written to localStorage, whatever GraphiQL's
  // own settings say: not as the headers editor's value, nor inside tabs or the history
  // (GraphiQL keeps each query's headers there). The rest is kept as GraphiQL keeps it.
  function withoutHeaders(value) {
    try {
      const parsed = JSON.parse(value);
      if (parsed === null || typeof parsed !== "object") return value;
      return JSON.stringify(parsed, (key, v) => (key === "headers" ? null : v));
    } catch {
      return value;
    }
  }
  const storage = {
    getItem: (key) => (HEADERS.test(key) ? null : window.localStorage.getItem(key)),
    setItem: (key, value) => {
      if (HEADERS.test(key)) return;
      window.localStorage.setItem(key, withoutHeaders(value));
    },
    removeItem: (key) => window.localStorage.removeItem(key),
    clear: () => {
      for (const key of Object.keys(window.localStorage)) {
        if (key.startsWith(NAMESPACE)) window.localStorage.removeItem(key);
      }
    },
    get length() {
      return Object.keys(window.localStorage).filter((key) => key.startsWith(NAMESPACE)).length;
    },
  };

  const example = `# Who you are, and the three newest sessions (set the key in Headers first).
query Viewer {
  viewer { name features }
  runtimeSessions(first: 3) { nodes { id title status } }
}
`;
  const root = window.ReactDOM.createRoot(document.getElementById("graphiql"));
  root.render(
    window.React.createElement(window.GraphiQL, {
      fetcher: window.GraphiQL.createFetcher({ url: "/graphql" }),
      storage,
      shouldPersistHeaders: false,
      showPersistHeadersSettings: false,
      isHeadersEditorEnabled: true,
      defaultEditorToolsVisibility: "headers",
      defaultHeaders: '{\n  "Authorization": "Bearer <key>"\n}',
      defaultQuery: example,
    }),
  );
})();
