"""The arguments of a ranked list (a session's neighbours, a search) and of the failure modes:
each declared once (`RANKED_ARGUMENTS`, `FAILURE_ARGUMENTS`), with its default and bounds; the
GraphQL fields (schema/arguments.py) and the REST routes (similar_sessions/rest.py) are
derived from the declaration, and every value is checked here."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any
from uuid import UUID

from data.failures import Pin
from resolvers.cursors import Cursors, Position
from resolvers.errors import BadArgument

DEFAULT_LIMIT = 5
DEFAULT_MAX_MATCHES = 2
LIMIT_BOUNDS = (1, 20)
MAX_MATCHES_BOUNDS = (0, 5)
WINDOW_DAYS_BOUNDS = (1, 365)
MAX_FILTER_VALUES = 20
MAX_FILTER_CHARS = 200


def filters_binding(
    statuses: Sequence[str] | None, source_types: Sequence[str] | None
) -> list[list[str] | None]:
    """The filters as a cursor is bound to them (None: no filter)."""
    return [None if f is None else list(f) for f in (statuses, source_types)]


@dataclass(frozen=True, slots=True)
class Argument:
    """One argument of a ranked list: the field it fills (`SimilarArgs.checked`), its name as
    a resolver's parameter and a REST query parameter (GraphQL camel-cases it), its type as
    GraphQL declares it, its default and description."""

    field: str
    param: str
    annotation: Any
    default: Any
    description: str | None = None
    rest: str | None = None  # its REST name, where it is not `param`

    @property
    def rest_name(self) -> str:
        return self.rest or self.param


RANKED_ARGUMENTS: tuple[Argument, ...] = (
    Argument("limit", "limit", int, DEFAULT_LIMIT),
    Argument("max_matches_per_session", "max_matches_per_session", int, DEFAULT_MAX_MATCHES),
    Argument("window_days", "window_days", int | None, None),
    Argument("include_match_text", "include_match_text", bool, True),
    Argument("cursor", "after", str | None, None, rest="cursor"),
    Argument(
        "statuses",
        "status",
        list[str] | None,
        None,
        "Only sessions of these statuses (e.g. failed).",
    ),
    Argument(
        "source_types",
        "source_type",
        list[str] | None,
        None,
        "Only sessions of these source types.",
    ),
)


@dataclass(frozen=True, slots=True)
class SimilarArgs:
    limit: int = DEFAULT_LIMIT
    max_matches_per_session: int = DEFAULT_MAX_MATCHES
    window_days: int | None = None
    include_match_text: bool = True
    after: Position | None = None
    statuses: tuple[str, ...] | None = None  # neighbours only of these statuses
    source_types: tuple[str, ...] | None = None  # ... and of these source types

    @property
    def filtered(self) -> bool:
        return self.statuses is not None or self.source_types is not None

    def binding(self, ranked: tuple[str, ...]) -> list[Any]:
        """What a cursor of this list is bound to: what it ranks (("similar", session id) or
        ("search", account id, text)) and the arguments that decide its order, not the page
        size."""
        return [
            *ranked,
            self.window_days,
            self.max_matches_per_session,
            *filters_binding(self.statuses, self.source_types),
        ]

    @classmethod
    def checked(
        cls,
        values: Mapping[str, Any],
        *,
        names: Mapping[str, str],
        ranked: tuple[str, ...],
        cursors: Cursors,
    ) -> SimilarArgs:
        """Validate the values (by RANKED_ARGUMENTS' fields, a missing one at its default)
        and open the cursor for the list `ranked`; `names` maps each field to the caller's
        spelling of it."""
        given = {a.field: values.get(a.field, a.default) for a in RANKED_ARGUMENTS}
        for name, (low, high) in (
            ("limit", LIMIT_BOUNDS),
            ("max_matches_per_session", MAX_MATCHES_BOUNDS),
            ("window_days", WINDOW_DAYS_BOUNDS),
        ):
            value = given[name]
            if value is not None and not low <= value <= high:
                raise BadArgument(names[name], f"must be between {low} and {high}, got {value}")
        args = cls(
            given["limit"],
            given["max_matches_per_session"],
            given["window_days"],
            given["include_match_text"],
            None,
            filter_values(given["statuses"], names["statuses"]),
            filter_values(given["source_types"], names["source_types"]),
        )
        if given["cursor"] is None:
            return args
        after = cursors.open_ranked(given["cursor"], args.binding(ranked), names["cursor"])
        return replace(args, after=after)


def plain_text(value: str, name: str, max_chars: int) -> str:
    """A text argument, stripped: 1 to max_chars characters PostgreSQL can hold (no NUL, no
    lone surrogate, which a JSON string may carry)."""
    text = value.strip()
    if not text or len(text) > max_chars or "\x00" in text or not _encodable(text):
        raise BadArgument(name, f"must be 1 to {max_chars} characters of text, without NUL")
    return text


def _encodable(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def filter_values(values: Sequence[str] | None, name: str) -> tuple[str, ...] | None:
    """A neighbour filter's values, deduplicated and sorted; None when none were given."""
    if values is None or len(values) == 0:
        return None
    if len(values) > MAX_FILTER_VALUES:
        raise BadArgument(name, f"takes at most {MAX_FILTER_VALUES} values, got {len(values)}")
    return tuple(sorted({plain_text(value, name, MAX_FILTER_CHARS) for value in values}))


# The failure modes' arguments (Query.failureModes, GET /api/v1/runtime-sessions/failure-modes),
# declared once as the ranked lists' are. REQUIRED: an argument without a default.
REQUIRED: Any = Ellipsis
DEFAULT_GROUPS = 10
GROUPS_BOUNDS = (1, 20)
DEFAULT_MEMBERS = 10
MEMBERS_BOUNDS = (1, 100)
FAILED = ("failed",)
FAILURE_ARGUMENTS: tuple[Argument, ...] = (
    Argument(
        "window_days",
        "window_days",
        int,
        REQUIRED,
        "The sessions that started in the last this many days (1 to 365).",
    ),
    Argument(
        "statuses",
        "status",
        list[str] | None,
        FAILED,
        "Only sessions of these statuses; null: any status.",
    ),
    Argument("source_types", "source_type", list[str] | None, None, "Only these source types."),
    Argument("limit", "limit", int, DEFAULT_GROUPS, "Groups per page (1 to 20)."),
    Argument("cursor", "after", str | None, None, rest="cursor"),
    Argument(
        "containing",
        "containing",
        UUID | None,
        None,
        "Only the group of this session (none when it is not one of the window's sessions).",
    ),
    Argument(
        "pin",
        "as_of",
        str | None,
        None,
        "An answer's `asOf`: this page of the same grouping (a new one, said so, if the "
        "account's data changed since).",
    ),
)


@dataclass(frozen=True, slots=True)
class FailureArgs:
    window_days: int
    statuses: tuple[str, ...] | None = FAILED
    source_types: tuple[str, ...] | None = None
    limit: int = DEFAULT_GROUPS
    after: tuple[int, int, UUID] | None = None  # a group's position (rules/failure_groups.py)
    containing: UUID | None = None
    include_match_text: bool = True  # GraphQL: only when a text or a term was selected
    pin: Pin | None = None  # the question's (a cursor's or `asOf`); None: a new question

    def binding(self, account_id: UUID) -> list[Any]:
        """What a cursor of the groups is bound to: the account and the arguments that decide
        which groups the list holds (not the page size)."""
        return [*self.members_binding(account_id), str(self.containing)]

    def members_binding(self, account_id: UUID) -> list[Any]:
        """What a cursor of a group's members is bound to (any group of this list: members of
        every group are in one order, newest first)."""
        return [
            "failure_modes",
            str(account_id),
            self.window_days,
            *filters_binding(self.statuses, self.source_types),
        ]

    @classmethod
    def checked(
        cls,
        values: Mapping[str, Any],
        *,
        names: Mapping[str, str],
        account_id: UUID,
        cursors: Cursors,
    ) -> FailureArgs:
        """Validate the values (by FAILURE_ARGUMENTS' fields; a missing one at its default)
        and open the cursor; `names` maps each field to the caller's spelling of it."""
        given = {a.field: values.get(a.field, a.default) for a in FAILURE_ARGUMENTS}
        if given["window_days"] is REQUIRED:
            raise BadArgument(names["window_days"], "is required")
        for name, (low, high) in (("window_days", WINDOW_DAYS_BOUNDS), ("limit", GROUPS_BOUNDS)):
            if not low <= given[name] <= high:
                raise BadArgument(
                    names[name], f"must be between {low} and {high}, got {given[name]}"
                )
        args = cls(
            window_days=given["window_days"],
            statuses=filter_values(given["statuses"], names["statuses"]),
            source_types=filter_values(given["source_types"], names["source_types"]),
            limit=given["limit"],
            containing=given["containing"],
        )
        pins = []
        if given["pin"] is not None:
            binding = args.members_binding(account_id)
            pins.append(cursors.open_failure_pin(given["pin"], binding, names["pin"]))
        if given["cursor"] is not None:
            binding = args.binding(account_id)
            after, pin = cursors.open_failure_groups(given["cursor"], binding, names["cursor"])
            args = replace(args, after=after)
            pins.append(pin)
        if len(set(pins)) > 1:
            raise BadArgument(names["pin"], f"is not the pin of {names['cursor']}")
        return replace(args, pin=pins[0] if pins else None)


def member_page_size(first: int, name: str = "first") -> int:
    """A page of a group's members: 1 to 100."""
    low, high = MEMBERS_BOUNDS
    if not low <= first <= high:
        raise BadArgument(name, f"must be between {low} and {high}, got {first}")
    return first
