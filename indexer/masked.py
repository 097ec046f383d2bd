"""A chunk's text with its credentials left out (values/credentials.without), read once for
both the pass's uses of it: the chunker writes it as the chunk's search terms, and the lexical
embedder takes its features from it moments later. The last KEPT texts of at most KEPT_CHARS
are kept (a chunk is a few thousand characters: a woken pass writes tens to hundreds), so
the second read is a lookup; a longer text is read each time."""

from __future__ import annotations

import functools

from values import credentials

KEPT = 512
KEPT_CHARS = 8_192  # with KEPT: at most 8 MB of texts kept (32 MB in the widest characters)


def without_credentials(text: str) -> str:
    return _kept(text) if len(text) <= KEPT_CHARS else credentials.without(text)


@functools.lru_cache(maxsize=KEPT)
def _kept(text: str) -> str:
    return credentials.without(text)
