"""Template text: a scaffold's instructions around each session's own words are left out
of the vectors; the session's own words are kept."""

from __future__ import annotations

from indexer.lexical import Fit, LexicalEmbedder
from indexer.templates import TemplateCounter, strip

TEMPLATE = (
    "Your response must contain exactly one bash code block with one command. "
    "Include a THOUGHT section before your command where you explain your reasoning."
)


def session(n: int) -> list[str]:
    """The template around the session's own issue, cut at a different word each time."""
    issue = f"TypeError in module{n % 12} when parsing header_rows{n % 12} of table{n % 12}"
    words = (f"Consider the issue: {issue}. " + TEMPLATE).split()
    return [" ".join(words[: 10 + n % 5]), " ".join(words[10 + n % 5 :])]


def test_a_template_in_many_sessions_is_stripped_and_the_task_text_kept() -> None:
    sessions = [session(n) for n in range(40)]
    counter = TemplateCounter()
    for passages in sessions:
        counter.add_session(passages)
    common = counter.common(min_sessions=20, min_share_percent=5)
    assert common  # the template's shingles are in all 40 sessions
    kept = strip(" ".join(sessions[3]), common)
    assert "module3" in kept and "bash" not in kept and "thought" not in kept
    assert counter.common(min_sessions=41, min_share_percent=5) == frozenset()


def test_a_chunk_of_template_only_has_no_vector_and_tasks_still_match() -> None:
    fit = Fit.of_sessions([session(n) for n in range(40)])
    embedder = LexicalEmbedder(fit)
    template_only, task_a, task_b, other = embedder.embed(
        [TEMPLATE, " ".join(session(3)), " ".join(session(15)), " ".join(session(4))]
    )
    assert not template_only.any()
    assert float(task_a @ task_b) > 0.9 > 0.5 > float(task_a @ other)
    again = Fit.from_bytes(fit.sessions, fit.to_bytes())
    assert again.identity == fit.identity and len(again.common) == len(fit.common) > 0
