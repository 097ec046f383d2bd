"""The MCP tools: each one's arguments (a JSON Schema written for a model choosing a tool),
its answer's type, and its GraphQL twin (the query that asks the same, by which a call is
priced and tested). Arguments are checked here; a bad one is a BadArgument naming it."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from resolvers.arguments import LIMIT_BOUNDS, WINDOW_DAYS_BOUNDS
from resolvers.comparison.search import MAX_SEARCH_CHARS
from resolvers.errors import BadArgument
from resolvers.replay import DEFAULT_REPLAY_PAGE, MAX_REPLAY_PAGE
from schema.failure_modes import FailureGroup, FailureMemberPage, FailureModes
from schema.search import SessionSearch
from schema.sessions import SimilarSessions
from similar_sessions.mcp_shapes import selection

# What an MCP answer leaves out: a neighbour's nested session (its fields are the
# neighbour's own), and the time a request took (it differs every call).
LEFT_OUT = frozenset({"session"})
STATUS = {
    "type": "array",
    "items": {"type": "string"},
    "description": "Only sessions whose status is one of these: failed, completed, running.",
}
WINDOW = {
    "type": "integer",
    "minimum": WINDOW_DAYS_BOUNDS[0],
    "maximum": WINDOW_DAYS_BOUNDS[1],
    "description": "Only sessions that started in the last this many days (1 to 365).",
}
LIMIT = {
    "type": "integer",
    "minimum": LIMIT_BOUNDS[0],
    "maximum": LIMIT_BOUNDS[1],
    "description": "How many sessions to answer, best first (1 to 20; 5 when left out).",
}
SESSION_ID = {
    "type": "string",
    "description": "The session: its id (a UUID), or the gen_ai.conversation.id its spans "
    "were sent under.",
}


@dataclass(frozen=True, slots=True)
class ToolSpec:
    """One tool: its name, what it is for, its arguments' schema (`required` among them)."""

    name: str
    description: str
    properties: Mapping[str, Mapping[str, Any]]
    required: tuple[str, ...] = ()

    @property
    def input_schema(self) -> dict[str, Any]:
        return {
            "type": "object",
            "properties": {k: dict(v) for k, v in self.properties.items()},
            "required": list(self.required),
            "additionalProperties": False,
        }


TOOLS = (
    ToolSpec(
        "find_similar_sessions",
        "Sessions of this account that went the same way as one session: its passages "
        "compared with every other session's, best first, each with its band (close, "
        "related, loose), the terms the two share and how that session ended (its status). "
        "Ask it when an agent is stuck, to learn whether a run like this one failed before "
        "and how that one ended.",
        {
            "session_id": SESSION_ID,
            "window_days": WINDOW,
            "limit": LIMIT,
            "status": STATUS,
            "include_match_text": {
                "type": "boolean",
                "description": "Include the matching passages' text and shared terms (true "
                "when left out); false answers the ranking only.",
            },
        },
        ("session_id",),
    ),
    ToolSpec(
        "search_sessions",
        "Sessions of this account with passages like a described text: an error message, "
        "a failure described in words. Ranked by its words and, when the account has a "
        "dense model, by its meaning; each result with its band and how it ended.",
        {
            "description": {
                "type": "string",
                "description": f"What to look for, in words (1 to {MAX_SEARCH_CHARS:,} "
                "characters): an error, a symptom, what the agent was doing.",
            },
            "window_days": WINDOW,
            "limit": LIMIT,
            "status": STATUS,
        },
        ("description",),
    ),
    ToolSpec(
        "failure_modes",
        "Which failures of a window recur and which are new: the account's failed sessions "
        "(or those of the statuses asked) grouped by how alike they went, new groups first, "
        "then by size; each group with its first and last member, the session before the "
        "window it recurs from, the terms its members share and its first members.",
        {
            "window_days": {
                **WINDOW,
                "description": "The sessions that started in the last this many days (1 to 365).",
            },
            "status": {
                **STATUS,
                "description": "Only sessions of these statuses (failed when "
                "left out; an empty list: any status).",
            },
            "limit": {**LIMIT, "description": "Groups per page (1 to 20; 10 when left out)."},
            "cursor": {
                "type": "string",
                "description": "The end_cursor of a previous answer, for its next page.",
            },
        },
        ("window_days",),
    ),
    ToolSpec(
        "get_session",
        "One session and a page of its replay (its turns in order, credentials masked): "
        "what the agent was asked, what it said and which tools it called.",
        {
            "session_id": SESSION_ID,
            "from_turn": {
                "type": "integer",
                "minimum": 0,
                "description": "The first turn to answer, by its ordinal (0 when left out): "
                "the last ordinal of a page plus one reads on.",
            },
            "turns": {
                "type": "integer",
                "minimum": 1,
                "maximum": MAX_REPLAY_PAGE,
                "description": f"How many turns (1 to {MAX_REPLAY_PAGE}; "
                f"{DEFAULT_REPLAY_PAGE} when left out).",
            },
        },
        ("session_id",),
    ),
)
BY_NAME = {tool.name: tool for tool in TOOLS}


def checked(tool: str, arguments: Mapping[str, Any] | None) -> dict[str, Any]:
    """The tool's arguments, each of its declared JSON type; BadArgument naming the first
    that is unknown, missing or of another type (bounds are checked by the resolvers)."""
    spec = BY_NAME.get(tool)
    if spec is None:
        raise BadArgument("name", f"is not a tool of this server: {tool[:40]!r}")
    given = dict(arguments or {})
    for name in sorted(set(given) - set(spec.properties)):
        raise BadArgument(name[:40], f"is not an argument of {tool}")
    for name in spec.required:
        if given.get(name) is None:
            raise BadArgument(name, "is required")
    for name, value in list(given.items()):
        if value is None:
            del given[name]
        elif not _fits(value, spec.properties[name]["type"]):
            raise BadArgument(name, f"must be {_WORDS[spec.properties[name]['type']]}")
    return given


_WORDS = {
    "integer": "a whole number",
    "string": "a string",
    "boolean": "true or false",
    "array": "a list of strings",
}


def _fits(value: Any, kind: str) -> bool:
    if kind == "integer":
        return isinstance(value, int) and not isinstance(value, bool)
    if kind == "boolean":
        return isinstance(value, bool)
    if kind == "array":
        return isinstance(value, list) and all(isinstance(v, str) for v in value)
    return isinstance(value, str)


MEMBERS = selection(FailureMemberPage, LEFT_OUT)
SESSION_FIELDS = "id title sourceType sourceId reference status startedAt lastActivityAt"
REPLAY = "replayPage(first: $turns, after: $after) { nodes { id ordinal occurredAt role kind "
REPLAY += "apiUsageId content contentTruncated } hasNextPage }"
_TWINS = {
    "find_similar_sessions": (
        "query($id: UUID!, $limit: Int! = 5, $windowDays: Int, $status: [String!], "
        "$includeMatchText: Boolean! = true) { runtimeSession(id: $id) { similarSessions("
        "limit: $limit, windowDays: $windowDays, status: $status, includeMatchText: "
        "$includeMatchText) " + selection(SimilarSessions, LEFT_OUT) + " } }"
    ),
    "search_sessions": (
        "query($text: String!, $limit: Int! = 5, $windowDays: Int, $status: [String!]) { "
        "searchSessions(text: $text, limit: $limit, windowDays: $windowDays, status: $status) "
        + selection(SessionSearch, LEFT_OUT)
        + " }"
    ),
    "get_session": (
        f"query($id: UUID!, $turns: Int! = {DEFAULT_REPLAY_PAGE}, $after: String) {{ "
        f"runtimeSession(id: $id) {{ {SESSION_FIELDS} {REPLAY} }} }}"
    ),
}
# failureModes' status defaults to ["failed"]: a variable left out keeps that default.
_FAILURE_TWIN = (
    "query($windowDays: Int!, STATUS$limit: Int! = 10, $after: String) { failureModes("
    "windowDays: $windowDays, PASS_STATUSlimit: $limit, after: $after) "
    + selection(FailureModes, LEFT_OUT, {FailureGroup: f"members {MEMBERS}"})
    + " }"
)
_VARIABLES = {
    "session_id": "id",
    "window_days": "windowDays",
    "include_match_text": "includeMatchText",
    "description": "text",
    "cursor": "after",
}


def twin(
    tool: str, arguments: Mapping[str, Any], after: str | None = None
) -> tuple[str, dict[str, Any]]:
    """The GraphQL query asking what the tool answers, and its variables (get_session's
    `after`: the replay cursor its `from_turn` stands for)."""
    variables = {_VARIABLES.get(k, k): v for k, v in arguments.items() if k not in ("from_turn",)}
    if tool == "get_session":
        variables["after"] = after
    if tool != "failure_modes":
        return _TWINS[tool], variables
    status = "status" in variables
    document = _FAILURE_TWIN.replace("PASS_STATUS", "status: $status, " if status else "")
    return document.replace("STATUS", "$status: [String!], " if status else ""), variables
