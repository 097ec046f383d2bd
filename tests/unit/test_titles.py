"""A session's title from its first user message: whitespace collapsed and cut between words,
so a credential across the cut is left out whole rather than shown as a part its masking no
longer recognises (issue 59: 34 of a token's 36 characters showed)."""

from __future__ import annotations

from transfer.formats.conversation import TITLE_CHARS, Turn, cut_between_words, title_of
from values import credentials

TOKEN = "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"


def test_a_token_across_the_cut_is_left_out_whole() -> None:
    for lead in range(TITLE_CHARS - len(TOKEN), TITLE_CHARS):  # every cut through the token
        said = "x" * (lead - 1) + " " + TOKEN + " then the deploy failed"
        title = title_of([Turn("user", "message", said)])
        assert title is not None and len(title) <= TITLE_CHARS and title.endswith("…")
        shown = credentials.masked(title)
        assert not any(TOKEN[i : i + 6] in shown for i in range(len(TOKEN) - 5)), title


def test_a_title_within_the_bound_is_whole_and_a_cut_one_ends_between_words() -> None:
    said = f"rotate {TOKEN} now"
    assert title_of([Turn("user", "message", said)]) == said
    assert credentials.masked(said) == "rotate [masked: GitHub Token] now"
    assert cut_between_words("the deploy failed again", 12) == "the deploy…"
    assert cut_between_words("the deploy failed again", 11) == "the deploy…"
    assert cut_between_words("the deploy failed again", 10) == "the…"
    assert cut_between_words("x" * 200, TITLE_CHARS) == ""
    assert title_of([Turn("user", "message", "x" * 200)]) is None  # the caller's fallback
