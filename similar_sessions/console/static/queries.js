// Every GraphQL document the console sends, in one place.

export const PAGE_SIZE = 20;
export const REPLAY_PAGE = 100; // turns shown at first and per "Show more steps"
export const REPLAY_SEEK_PAGE = 500; // turns per request while looking for a linked turn
export const SIMILAR_LIMIT = 5;
export const MATCHES_PER_SESSION = 2;

export const SESSION_LIST = `
query ConsoleSessionList($first: Int!, $after: String, $search: String) {
  viewer { name features }
  runtimeSessions(first: $first, after: $after, search: $search) {
    nodes { id title sourceId status startedAt lastActivityAt }
    endCursor
    hasNextPage
  }
}`;

const REPLAY_FIELDS = `
fragment ConsoleReplayPage on ReplayPage {
  nodes { id ordinal occurredAt role kind content }
  endCursor
  hasNextPage
}`;

// Only what the panel shows of each neighbour and match.
const SIMILAR_FIELDS = `
fragment ConsoleSimilarSessions on SimilarSessions {
  modelIdentity embeddedChunks probeChunks
  degraded { reasons detail }
  results {
    runtimeSessionId title startedAt similarity band matchedChunkCount consoleLink
    session { status }
    matches {
      sourceKind chunkIndex role redactionState text replayAnchor
      probe { sourceKind chunkIndex role occurredAt text replayAnchor }
    }
  }
  endCursor
  hasNextPage
}`;

// The session page with the panel collapsed: the header and the replay's first page.
export const SESSION = `
query ConsoleSession($id: UUID!, $first: Int!) {
  viewer { name features }
  runtimeSession(id: $id) {
    id title status reference startedAt lastActivityAt
    replayPage(first: $first) { ...ConsoleReplayPage }
  }
}
${REPLAY_FIELDS}`;

// The session page with the panel open: header, replay and neighbours in one request.
export const SESSION_WITH_SIMILAR = `
query ConsoleSessionWithSimilar($id: UUID!, $first: Int!, $limit: Int!, $maxMatches: Int!) {
  viewer { name features }
  runtimeSession(id: $id) {
    id title status reference startedAt lastActivityAt
    replayPage(first: $first) { ...ConsoleReplayPage }
    similarSessions(limit: $limit, maxMatchesPerSession: $maxMatches) {
      ...ConsoleSimilarSessions
    }
  }
}
${REPLAY_FIELDS}
${SIMILAR_FIELDS}`;

// The panel opened later, or its next page of neighbours.
export const SIMILAR_SESSIONS = `
query ConsoleSimilarSessions($id: UUID!, $limit: Int!, $maxMatches: Int!, $after: String) {
  runtimeSession(id: $id) {
    id
    similarSessions(limit: $limit, maxMatchesPerSession: $maxMatches, after: $after) {
      ...ConsoleSimilarSessions
    }
  }
}
${SIMILAR_FIELDS}`;

// More of the replay: "Show more steps", or looking for a linked turn.
export const REPLAY = `
query ConsoleReplay($id: UUID!, $first: Int!, $after: String) {
  runtimeSession(id: $id) {
    id
    replayPage(first: $first, after: $after) { ...ConsoleReplayPage }
  }
}
${REPLAY_FIELDS}`;
