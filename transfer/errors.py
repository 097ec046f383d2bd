"""Refusals of an import: each bad line as `file:line: reason`, a capped list of them."""

from __future__ import annotations

MAX_REPORTED_ERRORS = 20


class LineError(ValueError):
    """A line of an import file that cannot be imported."""

    def __init__(self, path: str, line: int, reason: str) -> None:
        super().__init__(f"{path}:{line}: {reason}")
        self.path, self.line, self.reason = path, line, reason


class ImportRefused(ValueError):
    """A file had lines that cannot be imported; nothing of it was written. Holds the first
    MAX_REPORTED_ERRORS of them, in line order, and how many there were in all."""

    def __init__(self, errors: list[LineError], total: int | None = None) -> None:
        self.errors = sorted(errors, key=lambda e: e.line)[:MAX_REPORTED_ERRORS]
        self.total = max(total or 0, len(errors))
        shown = "\n".join(str(e) for e in self.errors)
        more = self.total - len(self.errors)
        super().__init__(shown + (f"\n... and {more} more" if more > 0 else ""))


class ErrorLog:
    """Collects a file's line errors, keeping only the first few: a file of a million bad
    lines costs no more memory than one."""

    def __init__(self, path: str) -> None:
        self.path, self.kept, self.total = path, list[LineError](), 0

    def add(self, line: int, reason: str) -> None:
        self.total += 1
        if len(self.kept) < MAX_REPORTED_ERRORS:
            self.kept.append(LineError(self.path, line, reason))

    def raise_if_any(self) -> None:
        if self.total:
            raise ImportRefused(self.kept, self.total)
