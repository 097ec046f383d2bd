"""Search by description: labelled query sets, their metrics and baselines."""
