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
- Python's own small objects. pymalloc takes them from arenas of 1 MiB and gives an arena
  back only once every object in it is freed, so a pass's millions of short-lived objects
  leave arenas nearly empty and kept: after the failure modes' load, 20 MB of them held under
  1 MB of live objects. Under glibc's malloc (PYTHONMALLOC=malloc) the freed pages go back
  with the rest of the heap: the server kept +18% after that load instead of +30%
  (bench.fairness, the same session), its first pages as fast within the runs' spread
  (bench.latency.failure_modes, the two alternated). The allocator is chosen before the
  interpreter starts, so `similar-sessions serve` and `index --watch` start themselves again
  under it (`restart`).

`similar-sessions serve` sets the arenas and the threshold for itself (mallopt) and exports
glibc's variables for the worker processes it starts (which read them at their start) once the
embedded PostgreSQL is up, so that the database's own processes keep glibc's defaults; `index
--watch` sets them for itself. A setting the operator made, by its variable or its tunable, is
left as it is, and so is an allocator chosen by PYTHONMALLOC. Elsewhere than glibc, nothing is
done."""

from __future__ import annotations

import ctypes
import ctypes.util
import os
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

ARENAS = 2  # one per core of the machine this was measured on; fewer contend on malloc's lock
MMAP_THRESHOLD = 1 << 20  # 128 KiB to 1 MiB kept the same; the larger maps less often
M_ARENA_MAX = -8  # mallopt's parameters (malloc.h)
M_MMAP_THRESHOLD = -3


@dataclass(frozen=True, slots=True)
class Setting:
    variable: str  # glibc's environment variable
    tunable: str  # its name in GLIBC_TUNABLES
    parameter: int  # mallopt's
    value: int


SETTINGS = (
    Setting("MALLOC_ARENA_MAX", "glibc.malloc.arena_max", M_ARENA_MAX, ARENAS),
    Setting(
        "MALLOC_MMAP_THRESHOLD_", "glibc.malloc.mmap_threshold", M_MMAP_THRESHOLD, MMAP_THRESHOLD
    ),
)

_NAME = ctypes.util.find_library("c")
_LIBC = ctypes.CDLL(_NAME) if _NAME else None
_TRIM = getattr(_LIBC, "malloc_trim", None)
_MALLOPT = getattr(_LIBC, "mallopt", None)


ALLOCATOR = "PYTHONMALLOC"  # CPython's choice of allocator, read as the interpreter starts


@dataclass(frozen=True, slots=True)
class Restart:
    """The same command again, in a new interpreter (os.execve: the same process id)."""

    executable: str
    argv: list[str]
    environ: dict[str, str]

    def run(self) -> None:
        sys.stdout.flush()
        sys.stderr.flush()
        os.execve(self.executable, self.argv, self.environ)  # noqa: S606 (the same command)


def restart(
    environ: Mapping[str, str] = os.environ,
    argv: Sequence[str] = sys.orig_argv,
    executable: str = sys.executable,
) -> Restart | None:
    """The command line that starts this interpreter again under glibc's malloc for Python's
    objects; None elsewhere than glibc, or when the operator chose an allocator (any value
    of PYTHONMALLOC, `pymalloc` included)."""
    if _MALLOPT is None or ALLOCATOR in environ or not executable:
        return None
    return Restart(executable, [executable, *argv[1:]], {**environ, ALLOCATOR: "malloc"})


def trim() -> None:
    """Give the heap's free pages back to the system (glibc's malloc_trim; a no-op elsewhere),
    or the process keeps its high water for good."""
    if _TRIM is not None:
        _TRIM(0)


def tune(environ: Mapping[str, str] = os.environ) -> dict[str, str]:
    """The arenas and the mmap threshold set for this process (mallopt), but for a setting
    the operator made by its variable or its tunable; the variables the processes it starts
    should be given for the same (nothing elsewhere than glibc)."""
    if _MALLOPT is None:
        return {}
    made = {v for v in SETTINGS if v.variable in environ or v.tunable in _tunables(environ)}
    out = {}
    for setting in SETTINGS:
        if setting not in made:
            _MALLOPT(setting.parameter, setting.value)
            out[setting.variable] = str(setting.value)
    return out


def _tunables(environ: Mapping[str, str]) -> set[str]:
    """The tunables GLIBC_TUNABLES names (`name=value` pairs separated by colons)."""
    pairs = environ.get("GLIBC_TUNABLES", "").split(":")
    return {pair.split("=", 1)[0] for pair in pairs if "=" in pair}
