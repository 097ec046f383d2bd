"""Candidates for many probes' nearest chunks at once, found in memory: every (probe, chunk)
pair's cosine similarity in float32, then per probe the chunks that may be among its nearest
`per_probe` at or above the floor. PostgreSQL then measures those candidates exactly
(data/window_pool.py), so the answer is pgvector's own; this step only narrows.

A float32 similarity of unit-scale vectors is within about 1e-6 of pgvector's. Were it within
d, every chunk of the true nearest per_probe scores at least (the per_probe-th best float32
similarity) - 2d, and every one at or above the floor at least floor - d: keeping the chunks
at or above max(that per_probe-th best, floor) - CANDIDATE_SLACK, with the slack far above
2d, keeps every true one. Imports neither SQLAlchemy nor strawberry."""

from __future__ import annotations

import numpy as np

CANDIDATE_SLACK = 1e-4
# Probes ranked at once: a block's similarities are BLOCK x pool float32s.
BLOCK = 256


def candidates(
    probes: np.ndarray,
    probe_sessions: np.ndarray,
    pool: np.ndarray,
    pool_sessions: np.ndarray,
    per_probe: int,
    floor: float,
) -> list[np.ndarray]:
    """Per probe (a row of `probes`), the pool rows that may be among its `per_probe` nearest
    at or above `floor`, never of its own session (sessions as integer codes). A zero vector
    has no cosine similarity (pgvector's is NaN): it is no candidate and has none."""
    pool_norms = np.linalg.norm(pool, axis=1)
    usable = pool_norms > 0
    scale = np.where(usable, pool_norms, 1.0).astype(np.float32)
    unit_pool = (pool / scale[:, None]).astype(np.float32)
    out: list[np.ndarray] = []
    for start in range(0, len(probes), BLOCK):
        block = probes[start : start + BLOCK]
        norms = np.linalg.norm(block, axis=1)
        scores = (block / np.where(norms > 0, norms, 1.0)[:, None]).astype(np.float32) @ unit_pool.T
        own = pool_sessions[None, :] == probe_sessions[start : start + BLOCK, None]
        scores[own | ~usable[None, :] | (norms[:, None] == 0)] = -np.inf
        if scores.shape[1] > per_probe:
            kth = np.partition(scores, -per_probe, axis=1)[:, -per_probe]
        else:
            kth = np.full(len(block), -np.inf, dtype=np.float32)
        threshold = np.maximum(kth, floor) - CANDIDATE_SLACK
        kept = scores >= threshold[:, None]
        out += [np.flatnonzero(row) for row in kept]
    return out
