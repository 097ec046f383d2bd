"""Other work on the machine: processes that keep a core each busy while a block runs, as the
server, the database and the indexer do on a small machine."""

from __future__ import annotations

import contextlib
import multiprocessing
from collections.abc import Iterator
from typing import Any


def _spin(stop: Any) -> None:
    while not stop.is_set():
        sum(i * i for i in range(10_000))


@contextlib.contextmanager
def busy_processes(count: int) -> Iterator[None]:
    """`count` CPU-bound processes for the block's length (none for 0)."""
    stop = multiprocessing.Event()
    burners = [multiprocessing.Process(target=_spin, args=(stop,)) for _ in range(count)]
    for burner in burners:
        burner.start()
    try:
        yield
    finally:
        stop.set()
        for burner in burners:
            burner.join()
