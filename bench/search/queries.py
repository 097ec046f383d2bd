"""The labelled description sets: one task per description, written by hand, each sharing no
three consecutive words with any message of its task's sessions (bench/search/queries/README.md).

`python -m bench.search.queries [CORPUS ...]` checks the sets against the corpora."""

from __future__ import annotations

import json
import re
import sys
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from bench.quality import labelled

QUERIES_DIR = Path(__file__).parent / "queries"
WORD = re.compile(r"[a-z0-9]+")
SHARED_RUN = 3  # consecutive words a description may not share with its task's sessions
MIN_WORDS, MAX_WORDS = 6, 25

Run = tuple[str, ...]


class QuerySetError(ValueError):
    """A description set that cannot be used as it is; the message says where and why."""


@dataclass(frozen=True, slots=True)
class Query:
    task: str
    text: str


def words(text: str) -> list[str]:
    """Lowercased word tokens, the unit of the three-word rule."""
    return WORD.findall(text.lower())


def runs(text: str, length: int = SHARED_RUN) -> set[Run]:
    tokens = words(text)
    return {tuple(tokens[i : i + length]) for i in range(len(tokens) - length + 1)}


def _parsed(path: Path, number: int, line: str) -> Query:
    where = f"{path}:{number}"
    try:
        item = json.loads(line)
    except json.JSONDecodeError as exc:
        raise QuerySetError(f"{where}: not JSON ({exc.msg})") from None
    if not isinstance(item, dict) or set(item) != {"task_id", "text"}:
        raise QuerySetError(f'{where}: expected {{"task_id": ..., "text": ...}}')
    task, text = item["task_id"], item["text"]
    if not isinstance(task, str | int) or isinstance(task, bool) or not isinstance(text, str):
        raise QuerySetError(f"{where}: task_id must be a string or integer, text a string")
    count = len(text.split())
    if not MIN_WORDS <= count <= MAX_WORDS:
        raise QuerySetError(f"{where}: {count} words; a description has {MIN_WORDS} to {MAX_WORDS}")
    return Query(str(task), text)


def load(path: Path) -> list[Query]:
    """The descriptions of a .jsonl file, one {"task_id", "text"} a line, in file order."""
    queries: list[Query] = []
    seen: dict[str, int] = {}
    with path.open(encoding="utf-8") as handle:
        for number, line in enumerate(handle, 1):
            if not line.strip():
                continue
            query = _parsed(path, number, line)
            if query.text in seen:
                raise QuerySetError(f"{path}:{number}: same text as line {seen[query.text]}")
            seen[query.text] = number
            queries.append(query)
    if not queries:
        raise QuerySetError(f"{path}: no descriptions")
    return queries


def task_texts(corpus: labelled.Corpus) -> dict[str, list[str]]:
    """Every message of every session, by task: all roles, tool calls and tool output."""
    texts: dict[str, list[str]] = {}
    for session in corpus.sessions:
        texts.setdefault(session.task, []).extend(turn.content for turn in session.turns)
    return texts


def task_runs(messages: Iterable[str]) -> set[Run]:
    """Every run of SHARED_RUN words within one message, over the messages."""
    found: set[Run] = set()
    for message in messages:
        found |= runs(message)
    return found


def problems(queries: Sequence[Query], texts: Mapping[str, Sequence[str]]) -> list[str]:
    """One line per description that names an unknown task or shares words with its task."""
    lines = []
    known: dict[str, set[Run]] = {}
    for query in queries:
        if query.task not in texts:
            lines.append(f"task {query.task!r} is not in the corpus: {query.text!r}")
            continue
        if query.task not in known:
            known[query.task] = task_runs(texts[query.task])
        shared = runs(query.text) & known[query.task]
        if shared:
            spelled = "; ".join(sorted(" ".join(run) for run in shared))
            lines.append(f"task {query.task}: {query.text!r} shares {spelled!r}")
    return lines


def checked(queries: Sequence[Query], corpus: labelled.Corpus) -> list[Query]:
    """The descriptions, once each is known to follow the rule on this corpus."""
    found = problems(queries, task_texts(corpus))
    if found:
        raise QuerySetError(
            f"{len(found)} {corpus.name} description(s) break the three-word rule:\n  "
            + "\n  ".join(found)
        )
    return list(queries)


def query_set(name: str, corpus: labelled.Corpus | None = None, kind: str = "") -> list[Query]:
    """The set named after a corpus (`kind` "holdout": its held-out set), checked against
    that corpus (loaded if not given)."""
    corpus = corpus or labelled.CORPORA[name]()
    return checked(load(QUERIES_DIR / f"{name}{'-' + kind if kind else ''}.jsonl"), corpus)


# The sets of a corpus: the one written with the product (issue #26), the one written after
# it by someone who had not tuned anything on it (issue #38), and one written by another
# writer from the tasks' instructions alone, never shown a session or the other sets; the
# last two never used to tune.
SETS = {"authored": "", "held out": "holdout", "another writer": "other"}


def query_sets(name: str, corpus: labelled.Corpus) -> dict[str, list[Query]]:
    """Every set the corpus has, by label."""
    return {
        label: query_set(name, corpus, kind)
        for label, kind in SETS.items()
        if (QUERIES_DIR / f"{name}{'-' + kind if kind else ''}.jsonl").exists()
    }


def main(argv: Sequence[str] | None = None) -> int:
    names = list(argv if argv is not None else sys.argv[1:]) or list(labelled.CORPORA)
    for name in names:
        if name not in labelled.CORPORA:
            print(f"unknown corpus {name!r}; known: {', '.join(labelled.CORPORA)}")
            return 2
        try:
            sets = query_sets(name, labelled.CORPORA[name]())
        except QuerySetError as exc:
            print(exc)
            return 1
        for label, queries in sets.items():
            tasks = len({q.task for q in queries})
            print(
                f"{name} ({label}): {len(queries)} descriptions over {tasks} tasks follow the rule"
            )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
