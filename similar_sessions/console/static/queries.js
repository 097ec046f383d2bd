// Every GraphQL document the console sends, in one place.

export const PAGE_SIZE = 20;

export const SESSION_LIST = `
query ConsoleSessionList($first: Int!, $after: String) {
  viewer { name features }
  runtimeSessions(first: $first, after: $after) {
    nodes { id title status startedAt lastActivityAt }
    endCursor
    hasNextPage
  }
}`;

export const SESSION = `
query ConsoleSession($id: UUID!) {
  viewer { name features }
  runtimeSession(id: $id) {
    id title status reference startedAt lastActivityAt
    replay { id ordinal occurredAt role kind content }
  }
}`;

// One request brings the neighbours with everything the panel shows of each.
export const SIMILAR_SESSIONS = `
query ConsoleSimilarSessions($id: UUID!, $limit: Int!, $maxMatches: Int!, $after: String) {
  runtimeSession(id: $id) {
    id
    similarSessions(limit: $limit, maxMatchesPerSession: $maxMatches, after: $after) {
      runtimeSessionId modelIdentity embeddedChunks probeChunks pendingChunks
      degraded { semantic reasons detail }
      results {
        runtimeSessionId title startedAt similarity band matchedChunkCount
        matches {
          documentId sourceKind chunkIndex role similarity band redactionState text
          probe { documentId sourceKind sourceId chunkIndex role occurredAt }
        }
      }
      endCursor
      hasNextPage
    }
  }
}`;
