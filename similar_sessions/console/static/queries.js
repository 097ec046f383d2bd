// Every GraphQL document the console sends, in one place.

export const PAGE_SIZE = 20;
export const REPLAY_PAGE = 100; // turns shown at first and per "Show more steps"
export const REPLAY_SEEK_PAGE = 500; // turns per request while looking for a linked turn
export const SIMILAR_LIMIT = 5;
export const MATCHES_PER_SESSION = 2;
export const SEARCH_LIMIT = 5;
// runtimeSessions(search:) takes at most 200 characters, searchSessions(text:) 2,000.
export const TITLE_SEARCH_MAX = 200;
export const DESCRIBED_SEARCH_MAX = 2000;

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

// Only what the panel shows of each neighbour and match; when nothing passed the floor, the
// nearest sessions below it (`nearest`) come in the same shape.
const SIMILAR_FIELDS = `
fragment ConsoleSimilarSessions on SimilarSessions {
  modelIdentity embeddedChunks probeChunks floor
  degraded { reasons detail }
  results { ...ConsoleNeighbour }
  nearest { ...ConsoleNeighbour }
  endCursor
  hasNextPage
}

fragment ConsoleNeighbour on Neighbour {
  runtimeSessionId title startedAt similarity band matchedChunkCount consoleLink
  session { status }
  matches {
    sourceKind chunkIndex role redactionState text replayAnchor sharedTerms
    probe { sourceKind chunkIndex role occurredAt text replayAnchor }
  }
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

// How often this happened, by day: the console groups the days into weeks and months itself,
// so choosing another grouping asks nothing.
const TIMELINE_FIELDS = `
fragment ConsoleTimeline on Timeline {
  bucket perProbeBound countedFrom sessions
  buckets { start sessions }
  degraded { reasons detail }
}`;

// The session page with the panel open: header, replay, neighbours and timeline in one request.
export const SESSION_WITH_SIMILAR = `
query ConsoleSessionWithSimilar(
  $id: UUID!, $first: Int!, $limit: Int!, $maxMatches: Int!, $status: [String!]
) {
  viewer { name features }
  runtimeSession(id: $id) {
    id title status reference startedAt lastActivityAt
    replayPage(first: $first) { ...ConsoleReplayPage }
    similarSessions(limit: $limit, maxMatchesPerSession: $maxMatches, status: $status) {
      ...ConsoleSimilarSessions
      timeline(bucket: DAY) { ...ConsoleTimeline }
    }
  }
}
${REPLAY_FIELDS}
${SIMILAR_FIELDS}
${TIMELINE_FIELDS}`;

// The panel opened later, or its status filter changed: neighbours and timeline.
export const SIMILAR_SESSIONS = `
query ConsoleSimilarSessions($id: UUID!, $limit: Int!, $maxMatches: Int!, $status: [String!]) {
  runtimeSession(id: $id) {
    id
    similarSessions(limit: $limit, maxMatchesPerSession: $maxMatches, status: $status) {
      ...ConsoleSimilarSessions
      timeline(bucket: DAY) { ...ConsoleTimeline }
    }
  }
}
${SIMILAR_FIELDS}
${TIMELINE_FIELDS}`;

// The next page of neighbours (the timeline came with the first).
export const MORE_SIMILAR_SESSIONS = `
query ConsoleMoreSimilarSessions(
  $id: UUID!, $limit: Int!, $maxMatches: Int!, $status: [String!], $after: String
) {
  runtimeSession(id: $id) {
    id
    similarSessions(
      limit: $limit, maxMatchesPerSession: $maxMatches, status: $status, after: $after
    ) { ...ConsoleSimilarSessions }
  }
}
${SIMILAR_FIELDS}`;

// Sessions with passages like a described text (the search box), a page at a time: which legs
// ran, and each passage's words the text matched; when nothing was found, the nearest.
export const SEARCH_SESSIONS = `
query ConsoleSearchSessions($text: String!, $limit: Int!, $maxMatches: Int!, $after: String) {
  searchSessions(text: $text, limit: $limit, maxMatchesPerSession: $maxMatches, after: $after) {
    modelIdentity floor
    legs { leg model ran reasons }
    degraded { reasons detail }
    results { ...ConsoleFound }
    nearest { ...ConsoleFound }
    endCursor
    hasNextPage
  }
}

fragment ConsoleFound on SearchNeighbour {
  runtimeSessionId title startedAt similarity band matchedChunkCount consoleLink
  session { status }
  matches {
    documentId sourceKind chunkIndex role redactionState text matchedWords replayAnchor
    sharedTerms
  }
}`;

// More of the replay: "Show more steps", or looking for a linked turn.
export const REPLAY = `
query ConsoleReplay($id: UUID!, $first: Int!, $after: String) {
  runtimeSession(id: $id) {
    id
    replayPage(first: $first, after: $after) { ...ConsoleReplayPage }
  }
}
${REPLAY_FIELDS}`;

// A running session's page, every few seconds: its status and last activity, and (when the
// replay shown reaches its end) the turns after the last one shown.
export const LIVE_SESSION = `
query ConsoleLiveSession($id: UUID!, $first: Int!, $after: String, $atEnd: Boolean!) {
  runtimeSession(id: $id) {
    id status lastActivityAt
    replayPage(first: $first, after: $after) @include(if: $atEnd) { ...ConsoleReplayPage }
  }
}
${REPLAY_FIELDS}`;

// The failure modes page: a window's groups of sessions of one status, ten at a time.
export const FAILURE_WINDOWS = [1, 7, 30];
export const FAILURE_GROUPS = 10;
export const FAILURE_MEMBERS = 20;
export const FAILURE_MODES = `
query ConsoleFailureModes($windowDays: Int!, $status: [String!], $after: String) {
  viewer { name features }
  failureModes(windowDays: $windowDays, status: $status, limit: ${FAILURE_GROUPS}, after: $after) {
    windowDays windowStart sessions compared leftOut notEmbedded groupCount asOf
    degraded { reasons detail }
    groups {
      size isNew since sharedTerms alertedAt
      daily { start sessions }
      representative { id title status startedAt }
      seenBefore { id title startedAt }
    }
    endCursor hasNextPage
  }
}`;

// On a session opened from a card: its group's other members, a page at a time.
export const FAILURE_GROUP = `
query ConsoleFailureGroup($windowDays: Int!, $status: [String!], $id: UUID!, $after: String, $asOf: String) {
  failureModes(windowDays: $windowDays, status: $status, containing: $id, limit: 1, asOf: $asOf) {
    asOf
    degraded { reasons detail }
    groups {
      size isNew since sharedTerms
      members(first: ${FAILURE_MEMBERS}, after: $after) {
        nodes {
          runtimeSessionId title status startedAt relatedInGroup consoleLink
          match { similarity band sharedTerms }
        }
        endCursor hasNextPage
      }
    }
  }
}`;

// The "Alerts" page: the account's rules and their latest deliveries (manage_alerts).
export const ALERTS = `
query ConsoleAlerts {
  viewer { name features scopes }
  alertRules { id kind url minSessions windowHours factor baselineDays statuses enabled disabledReason }
  alertDeliveries(first: 20) {
    webhookId ruleId state attempts createdAt nextAttemptAt lastAttemptAt lastStatus lastError
  }
}`;

export const VIEWER = `query ConsoleViewer { viewer { name features scopes } }`;
