"""The comparison of sessions, as records and phases: one frozen record per comparison
(state.py), the phases over them (phases.py: plan, look up, verify, rank), the second
statement and the answer (answer.py); the search and the timeline reuse them."""
