"""The resolvers' expected errors; the edge turns them into HTTP and GraphQL answers."""

from __future__ import annotations


class BadArgument(ValueError):
    """A caller's argument is out of bounds or malformed; names the argument."""

    def __init__(self, argument: str, message: str) -> None:
        super().__init__(f"{argument}: {message}")
        self.argument = argument


class LimitExceeded(Exception):
    """A request asked for more than a documented limit allows; names what it refused, the
    limit and the setting (or constant) that holds it."""

    def __init__(self, refused: str, why: str, limit: int, setting: str) -> None:
        super().__init__(f"{refused}: {why}; at most {limit} per request ({setting})")
        self.limit = limit


class MissingScope(PermissionError):
    """The caller's key lacks the scope a field needs; names it."""

    def __init__(self, scope: str) -> None:
        super().__init__(f"this API key lacks the scope {scope}")
        self.scope = scope
