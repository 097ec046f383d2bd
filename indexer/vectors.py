"""Vectors as pgvector's text form."""

from __future__ import annotations

import numpy as np


def as_text(vectors: np.ndarray) -> list[str]:
    """pgvector's text form of each row; 9 significant digits round-trip a float32."""
    return ["[" + ",".join(f"{x:.9g}" for x in row) + "]" for row in vectors.tolist()]
