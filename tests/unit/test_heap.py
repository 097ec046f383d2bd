"""The server's heap: the malloc arenas and the mmap threshold set for it, and the variables
its workers get for the same, unless the operator set them; the heap given back after a large
pass."""

from __future__ import annotations

from typing import Any

import pytest

from config import heap

ARENAS = "MALLOC_ARENA_MAX"
THRESHOLD = "MALLOC_MMAP_THRESHOLD_"


@pytest.fixture
def mallopt(monkeypatch: pytest.MonkeyPatch) -> list[tuple[Any, ...]]:
    calls: list[tuple[Any, ...]] = []
    monkeypatch.setattr(heap, "_MALLOPT", lambda *args: calls.append(args))
    return calls


def test_both_are_set_for_the_process_and_said_for_its_workers(
    mallopt: list[tuple[Any, ...]],
) -> None:
    environ: dict[str, str] = {}
    workers = heap.tune(environ)
    assert workers == {ARENAS: str(heap.ARENAS), THRESHOLD: str(heap.MMAP_THRESHOLD)}
    assert environ == {}, "the caller exports them, once the embedded server has started"
    assert mallopt == [
        (heap.M_ARENA_MAX, heap.ARENAS),
        (heap.M_MMAP_THRESHOLD, heap.MMAP_THRESHOLD),
    ]


def test_the_operators_variable_is_left_as_it_is(mallopt: list[tuple[Any, ...]]) -> None:
    assert heap.tune({ARENAS: "8"}) == {THRESHOLD: str(heap.MMAP_THRESHOLD)}
    assert mallopt == [(heap.M_MMAP_THRESHOLD, heap.MMAP_THRESHOLD)]


@pytest.mark.parametrize(
    "tunables",
    [
        "glibc.malloc.mmap_threshold=65536",
        "glibc.malloc.tcache_count=0:glibc.malloc.mmap_threshold=65536",
    ],
)
def test_the_operators_tunable_is_left_as_it_is(
    mallopt: list[tuple[Any, ...]], tunables: str
) -> None:
    assert heap.tune({"GLIBC_TUNABLES": tunables}) == {ARENAS: str(heap.ARENAS)}
    assert mallopt == [(heap.M_ARENA_MAX, heap.ARENAS)]


def test_a_tunable_named_only_inside_another_value_is_not_the_operators(
    mallopt: list[tuple[Any, ...]],
) -> None:
    environ = {"GLIBC_TUNABLES": "glibc.malloc.arena_test=glibc.malloc.mmap_threshold"}
    assert set(heap.tune(environ)) == {ARENAS, THRESHOLD}


def test_without_glibc_nothing_is_done(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(heap, "_MALLOPT", None)
    monkeypatch.setattr(heap, "_TRIM", None)
    assert heap.tune({}) == {}
    heap.trim()  # no error


def test_serve_starts_again_under_glibcs_malloc(mallopt: list[tuple[Any, ...]]) -> None:
    again = heap.restart({"PATH": "/bin"}, ["python", "-m", "similar_sessions.cli", "serve"], "/py")
    assert again == heap.Restart(
        "/py",
        ["/py", "-m", "similar_sessions.cli", "serve"],
        {"PATH": "/bin", "PYTHONMALLOC": "malloc"},
    )


@pytest.mark.parametrize("chosen", ["pymalloc", "malloc", "pymalloc_debug"])
def test_an_allocator_the_operator_chose_is_kept(
    mallopt: list[tuple[Any, ...]], chosen: str
) -> None:
    assert heap.restart({"PYTHONMALLOC": chosen}, ["similar-sessions", "serve"], "/py") is None


def test_nothing_starts_again_elsewhere_than_glibc(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(heap, "_MALLOPT", None)
    assert heap.restart({}, ["similar-sessions", "serve"], "/py") is None
