"""The server's malloc arenas: limited to ARENAS for itself and the workers it starts, unless
the operator set MALLOC_ARENA_MAX; the heap given back after a large pass."""

from __future__ import annotations

from typing import Any

import pytest

from resolvers import heap


def test_the_arenas_are_limited_for_the_process_and_its_workers(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    calls: list[tuple[Any, ...]] = []
    monkeypatch.setattr(heap, "_MALLOPT", lambda *args: calls.append(args))
    environ: dict[str, str] = {}
    assert heap.limit_arenas(environ) == heap.ARENAS
    assert environ == {"MALLOC_ARENA_MAX": str(heap.ARENAS)}  # read by each worker at start
    assert calls == [(heap.M_ARENA_MAX, heap.ARENAS)]


def test_the_operators_setting_is_left_as_it_is(monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[tuple[Any, ...]] = []
    monkeypatch.setattr(heap, "_MALLOPT", lambda *args: calls.append(args))
    environ = {"MALLOC_ARENA_MAX": "8"}
    assert heap.limit_arenas(environ) is None
    assert environ == {"MALLOC_ARENA_MAX": "8"}
    assert calls == []


def test_without_glibc_nothing_is_done(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(heap, "_MALLOPT", None)
    monkeypatch.setattr(heap, "_TRIM", None)
    environ: dict[str, str] = {}
    assert heap.limit_arenas(environ) is None
    assert environ == {}
    heap.trim()  # no error
