"""The resolvers' expected errors; the edge turns them into HTTP and GraphQL answers."""

from __future__ import annotations


class BadArgument(ValueError):
    """A caller's argument is out of bounds or malformed; names the argument."""

    def __init__(self, argument: str, message: str) -> None:
        super().__init__(f"{argument}: {message}")
        self.argument = argument


class LimitExceeded(Exception):
    """A request asked for more than a documented limit allows."""

    def __init__(self, what: str, limit: int) -> None:
        super().__init__(f"{what}: at most {limit} per request")
        self.limit = limit
