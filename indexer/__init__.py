"""The indexing worker: chunks sessions' activity and embeds the chunks."""
