"""The synthetic vector space the latency and import corpora share: one model's name and
dimensions, and topic centres each with sub-topics (the phases of a workflow)."""

from __future__ import annotations

import numpy as np

DIMS = 384
MODEL = "local:hash-384@384"  # a model no embedder serves: the vectors are the corpus's own
TOPICS = 400
SUBTOPICS = 6


def unit_rows(rng: np.random.Generator, n: int) -> np.ndarray:
    """n random directions of DIMS dimensions, each of norm 1."""
    v = rng.standard_normal((n, DIMS)).astype(np.float32)
    unit: np.ndarray = v / np.linalg.norm(v, axis=1, keepdims=True)
    return unit


def topic_space(seed: int) -> tuple[np.ndarray, np.ndarray]:
    """(TOPICS centres, TOPICS x SUBTOPICS sub-topic directions), the same for a seed."""
    rng = np.random.default_rng([seed, 999_999])
    centres = unit_rows(rng, TOPICS)
    subs = unit_rows(rng, TOPICS * SUBTOPICS).reshape(TOPICS, SUBTOPICS, DIMS)
    return centres, subs
