"""bench.ingest's replays: each is another run of its session's task, not the same text."""

from __future__ import annotations

from bench.ingest.agents import Replay

TURNS = (
    ("user", "text", "my flight to Boston was cancelled, please rebook me on the next one"),
    ("assistant", "tool_call", 'search_flights {"origin": "JFK", "destination": "BOS"}'),
    ("tool", "tool_result", "HAT123 departs 09:15 arrives 10:40 seats available 12"),
    ("assistant", "text", "I found HAT123 tomorrow morning; shall I book it for you?"),
)
REPLAY = Replay("tau-bench", "airline/1", "task-1", TURNS * 20)


def words(replay: Replay) -> int:
    return sum(len(content.split()) for _, _, content in replay.turns)


def test_a_replay_drops_about_its_share_of_words() -> None:
    varied = REPLAY.varied("run-0-0|airline/1", 0.1)

    assert 0.8 * words(REPLAY) < words(varied) < 0.97 * words(REPLAY)
    assert [(r, k) for r, k, _ in varied.turns] == [(r, k) for r, k, _ in REPLAY.turns]


def test_two_replays_of_one_session_differ_and_one_seed_gives_one_text() -> None:
    first, again = REPLAY.varied("run-0-0|airline/1", 0.1), REPLAY.varied("run-0-0|airline/1", 0.1)
    other = REPLAY.varied("run-1-0|airline/1", 0.1)

    assert first == again
    assert first.turns != other.turns


def test_a_tool_call_keeps_its_tool() -> None:
    varied = REPLAY.varied("run-0-3|airline/1", 0.5)

    calls = [content for _, kind, content in varied.turns if kind == "tool_call"]
    assert all(call.split(" ", 1)[0] == "search_flights" for call in calls)


def test_no_share_replays_the_session_verbatim() -> None:
    assert REPLAY.varied("run-0-0|airline/1", 0.0) is REPLAY
