"""The labelled description sets of bench/search and their rule: no description shares three
consecutive words with a message of its task's sessions (the tau-bench set checked against
the repo's copy of the corpus; the coding set is checked by the bench, which has the corpus)."""

from __future__ import annotations

from pathlib import Path
from uuid import uuid4

import pytest

from bench.quality import labelled
from bench.search.queries import (
    QUERIES_DIR,
    Query,
    QuerySetError,
    checked,
    load,
    query_set,
    runs,
)


def corpus_of(*sessions: tuple[str, str]) -> labelled.Corpus:
    made = [
        labelled.Session(
            uuid4(), f"s{i}", task, "agent", "", (labelled.Turn("user", "message", text),)
        )
        for i, (task, text) in enumerate(sessions)
    ]
    return labelled.Corpus("tiny", made)


def test_the_tau_bench_set_follows_the_rule_on_the_demo_corpus() -> None:
    queries = query_set("tau-bench")  # labelled.tau_bench reads demo/tau-bench-airline-gpt4o.json
    assert len(queries) >= 45
    assert len({query.task for query in queries}) >= 45


def test_the_held_out_tau_bench_set_follows_the_rule_and_names_40_tasks() -> None:
    held = query_set("tau-bench", kind="holdout")
    assert len({query.task for query in held}) >= 40
    authored = {q.task: q.text for q in query_set("tau-bench")}
    for query in held:  # not the authored description again, in other words or the same
        assert not runs(query.text) & runs(authored.get(query.task, ""))


def test_another_writers_tau_bench_set_follows_the_rule_and_names_every_task() -> None:
    other = query_set("tau-bench", kind="other")
    assert sorted(int(query.task) for query in other) == list(range(50))


def test_the_coding_set_names_45_tasks_over_the_repos() -> None:
    queries = load(QUERIES_DIR / "coding-agents.jsonl")
    assert len({query.task for query in queries}) >= 45
    assert len({query.task.split("__")[0] for query in queries}) >= 10
    assert all("__" in query.task for query in queries)


def test_runs_are_lowercased_words_of_letters_and_digits() -> None:
    assert runs("Can't book: JFK-LAX, 2 bags") == {
        ("can", "t", "book"),
        ("t", "book", "jfk"),
        ("book", "jfk", "lax"),
        ("jfk", "lax", "2"),
        ("lax", "2", "bags"),
    }


def test_a_description_sharing_three_words_with_its_task_is_refused_by_name() -> None:
    corpus = corpus_of(("1", "I want to CANCEL my flight, please."), ("2", "swap the seat now"))
    fine = Query("1", "customer asks us to drop a booking entirely")
    leaking = Query("1", "they wanted to cancel my flight today")
    elsewhere = Query("2", "they wanted to cancel my flight today too")  # task 2 never said it
    assert checked([fine, elsewhere], corpus) == [fine, elsewhere]
    with pytest.raises(QuerySetError) as refused:
        checked([fine, leaking], corpus)
    message = str(refused.value)
    assert "1 tiny description(s)" in message and leaking.text in message
    assert "cancel my flight; to cancel my" in message and fine.text not in message


def test_a_description_of_an_unknown_task_is_refused() -> None:
    with pytest.raises(QuerySetError, match="task '9' is not in the corpus"):
        checked([Query("9", "a task nobody recorded at all")], corpus_of(("1", "hello")))


@pytest.mark.parametrize(
    ("line", "error"),
    [
        ("{not json", "not JSON"),
        ('{"task_id": "1"}', 'expected {"task_id": ..., "text": ...}'),
        ('{"task_id": true, "text": "one two three four five six"}', "task_id must be"),
        ('{"task_id": "1", "text": "far too short"}', "3 words; a description has 6 to 25"),
    ],
)
def test_a_bad_line_is_refused_with_its_file_and_line(
    tmp_path: Path, line: str, error: str
) -> None:
    path = tmp_path / "set.jsonl"
    path.write_text('{"task_id": 3, "text": "a fine description of six words"}\n' + line + "\n")
    with pytest.raises(QuerySetError) as refused:
        load(path)
    assert str(refused.value).startswith(f"{path}:2: ")
    assert error in str(refused.value)


def test_the_same_text_twice_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "set.jsonl"
    line = '{"task_id": "1", "text": "a fine description of six words"}\n'
    path.write_text(line + "\n" + line)
    with pytest.raises(QuerySetError, match=r"set.jsonl:3: same text as line 1"):
        load(path)


def test_an_integer_task_id_is_read_as_text(tmp_path: Path) -> None:
    path = tmp_path / "set.jsonl"
    path.write_text('{"task_id": 3, "text": "x y z a b c"}\n')
    assert load(path) == [Query("3", "x y z a b c")]
