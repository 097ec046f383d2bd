"""The server's heap: the malloc arenas and the mmap threshold set for it and the workers it
starts, unless the operator set them; the heap given back after a large pass."""

from __future__ import annotations

from typing import Any

import pytest

from resolvers import heap

ARENAS = "MALLOC_ARENA_MAX"
THRESHOLD = "MALLOC_MMAP_THRESHOLD_"


@pytest.fixture
def mallopt(monkeypatch: pytest.MonkeyPatch) -> list[tuple[Any, ...]]:
    calls: list[tuple[Any, ...]] = []
    monkeypatch.setattr(heap, "_MALLOPT", lambda *args: calls.append(args))
    return calls


def test_both_are_set_for_the_process_and_its_workers(mallopt: list[tuple[Any, ...]]) -> None:
    environ: dict[str, str] = {}
    assert heap.tune(environ) == {ARENAS: heap.ARENAS, THRESHOLD: heap.MMAP_THRESHOLD}
    # read by each worker at its start
    assert environ == {ARENAS: str(heap.ARENAS), THRESHOLD: str(heap.MMAP_THRESHOLD)}
    assert mallopt == [
        (-8, heap.ARENAS),
        (-3, heap.MMAP_THRESHOLD),
    ]  # M_ARENA_MAX, M_MMAP_THRESHOLD


def test_the_operators_variable_is_left_as_it_is(mallopt: list[tuple[Any, ...]]) -> None:
    environ = {ARENAS: "8"}
    assert heap.tune(environ) == {THRESHOLD: heap.MMAP_THRESHOLD}
    assert environ[ARENAS] == "8"
    assert mallopt == [(-3, heap.MMAP_THRESHOLD)]


def test_the_operators_tunable_is_left_as_it_is(mallopt: list[tuple[Any, ...]]) -> None:
    environ = {"GLIBC_TUNABLES": "glibc.malloc.mmap_threshold=65536"}
    assert heap.tune(environ) == {ARENAS: heap.ARENAS}
    assert THRESHOLD not in environ
    assert mallopt == [(-8, heap.ARENAS)]


def test_without_glibc_nothing_is_done(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(heap, "_MALLOPT", None)
    monkeypatch.setattr(heap, "_TRIM", None)
    environ: dict[str, str] = {}
    assert heap.tune(environ) == {}
    assert environ == {}
    heap.trim()  # no error
