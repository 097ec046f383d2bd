"""Domain errors the data layer raises instead of driver exceptions: the edges map them to
HTTP and GraphQL answers (schema/errors.py), and nothing above data/ sorts a driver error."""

from __future__ import annotations


class Unavailable(Exception):
    """The database cannot answer right now but will: unreachable, starting up or
    recovering, its connection lost, no connection free in time, or a statement past its
    time budget. `cause` names which, as a metric label."""

    def __init__(self, cause: str = "database") -> None:
        super().__init__("the database is unavailable; retry shortly")
        self.cause = cause


class StatementTimedOut(Unavailable):
    """A statement ran past its statement_timeout and was cancelled (its transaction, if it
    had one, is aborted)."""

    def __init__(self) -> None:
        super().__init__("statement_timeout")


class ComparisonTimedOut(Exception):
    """The comparison's probe lookup ran past its time budget; its transaction is aborted."""
