"""The process's heap under glibc: how many malloc arenas its threads share, from what size a
block is mapped on its own, and giving back what a large pass freed (issue #37).

- Arenas. glibc gives each thread that allocates while another holds an arena an arena of
  its own, up to 8 per core. The comparisons' and the failure modes' CPU work runs in worker
  threads (asyncio.to_thread), so their freed memory stays spread over many arenas that
  malloc_trim cannot empty: after six keys' failure-modes load (bench.fairness's case, in
  process) the process kept 117 MB more than before, against 48 MB with 2 arenas.
- The mmap threshold. glibc maps a block of 128 KiB or more on its own, and gives it back
  when freed, but each such free raises the threshold (up to 32 MiB): after the first large
  pass, the next passes' arrays land inside the arenas, where a few live blocks between them
  pin the freed pages. Held at MMAP_THRESHOLD, the same load kept 25 MB instead of 47 (a
  server of 136 MB, in process).

`similar-sessions serve` sets both (mallopt for itself; glibc's variable for the worker
processes it starts, which read it at their start), unless the operator set that variable or
the same glibc tunable. Elsewhere than glibc, nothing is done."""

from __future__ import annotations

import ctypes
import ctypes.util
import os
from collections.abc import MutableMapping

ARENAS = 2  # one per core of the machine this was measured on; fewer contend on malloc's lock
MMAP_THRESHOLD = 1 << 20  # 128 KiB to 1 MiB kept the same; the larger maps less often
# Each setting: glibc's variable, its tunable in GLIBC_TUNABLES, mallopt's parameter (malloc.h).
SETTINGS = {
    "MALLOC_ARENA_MAX": ("glibc.malloc.arena_max", -8, ARENAS),
    "MALLOC_MMAP_THRESHOLD_": ("glibc.malloc.mmap_threshold", -3, MMAP_THRESHOLD),
}

_NAME = ctypes.util.find_library("c")
_LIBC = ctypes.CDLL(_NAME) if _NAME else None
_TRIM = getattr(_LIBC, "malloc_trim", None)
_MALLOPT = getattr(_LIBC, "mallopt", None)


def trim() -> None:
    """Give the heap's free pages back to the system (glibc's malloc_trim; a no-op elsewhere),
    or the process keeps its high water for good."""
    if _TRIM is not None:
        _TRIM(0)


def tune(environ: MutableMapping[str, str] = os.environ) -> dict[str, int]:
    """The arenas and the mmap threshold set for this process (mallopt) and the processes it
    starts (the variable); a setting the operator made, by its variable or its tunable, is
    left as it is. What was set, by variable (nothing elsewhere than glibc)."""
    if _MALLOPT is None:
        return {}
    tunables = environ.get("GLIBC_TUNABLES", "")
    done = {}
    for variable, (tunable, parameter, value) in SETTINGS.items():
        if variable in environ or tunable in tunables:
            continue
        environ[variable] = str(value)
        _MALLOPT(parameter, value)
        done[variable] = value
    return done
