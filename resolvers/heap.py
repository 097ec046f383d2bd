"""The process's heap under glibc: how many malloc arenas its threads share, and giving back
what a large pass freed (issue #37).

glibc gives each thread that allocates while another holds an arena an arena of its own, up
to 8 per core. The comparisons' and the failure modes' CPU work runs in worker threads
(asyncio.to_thread), so their freed memory stays spread over many arenas that malloc_trim
cannot empty: after six keys' failure-modes load (bench.fairness's case, in process) the
process kept 117 MB more than before, against 48 MB with 2 arenas. `similar-sessions serve`
therefore limits the arenas to ARENAS, unless the operator set MALLOC_ARENA_MAX (glibc's own
variable, read by every worker process at its start). Elsewhere than glibc, nothing is done."""

from __future__ import annotations

import ctypes
import ctypes.util
import os
from collections.abc import MutableMapping

ARENAS = 2  # one per core of the machine this was measured on; fewer contend on malloc's lock
ARENA_VARIABLE = "MALLOC_ARENA_MAX"
M_ARENA_MAX = -8  # mallopt's parameter (malloc.h)

_NAME = ctypes.util.find_library("c")
_LIBC = ctypes.CDLL(_NAME) if _NAME else None
_TRIM = getattr(_LIBC, "malloc_trim", None)
_MALLOPT = getattr(_LIBC, "mallopt", None)


def trim() -> None:
    """Give the heap's free pages back to the system (glibc's malloc_trim; a no-op elsewhere),
    or the process keeps its high water for good."""
    if _TRIM is not None:
        _TRIM(0)


def limit_arenas(environ: MutableMapping[str, str] = os.environ) -> int | None:
    """At most ARENAS malloc arenas for this process (mallopt) and the processes it starts
    (the variable, which glibc reads at their start); the operator's MALLOC_ARENA_MAX, when
    set, is left as it is. The limit set, or None (the operator's, or not glibc)."""
    if ARENA_VARIABLE in environ or _MALLOPT is None:
        return None
    environ[ARENA_VARIABLE] = str(ARENAS)
    _MALLOPT(M_ARENA_MAX, ARENAS)
    return ARENAS
