"""A chunk's text without its credentials, read once for the chunker and the embedder."""

from __future__ import annotations

from indexer import masked
from indexer.lexical import features
from values import credentials

KEY = "AKIAIOSFODNN7EXAMPLE"


def test_the_text_is_the_one_credentials_gives_and_its_second_read_is_kept() -> None:
    text = f"deploy failed: aws_access_key_id = {KEY} rejected by the gateway"
    before = masked._kept.cache_info()
    first = masked.without_credentials(text)
    assert first == credentials.without(text) and KEY not in first
    assert "akiaiosfodnn7example" not in features(text)  # the embedder's read: a lookup
    after = masked._kept.cache_info()
    assert after.hits >= before.hits + 1 and after.misses == before.misses + 1


def test_a_text_past_the_bound_is_read_each_time_and_never_kept() -> None:
    text = f"{KEY} " + "x" * masked.KEPT_CHARS
    before = masked._kept.cache_info()
    assert masked.without_credentials(text) == credentials.without(text)
    assert KEY not in masked.without_credentials(text)
    assert masked._kept.cache_info().currsize == before.currsize
