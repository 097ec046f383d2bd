"""What a provider raises when it could not embed a batch."""

from __future__ import annotations


class EmbeddingFailed(RuntimeError):
    """The provider did not embed a batch after its retries; the message names why without
    any text or key (it is stored with the batch's chunks)."""
