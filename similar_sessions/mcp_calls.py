"""What each MCP tool answers: the same resolvers as its GraphQL twin, their result objects
written by the one answer model (similar_sessions/answers.py)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import replace
from typing import Any
from uuid import UUID

from data.sessions import SessionRow
from resolvers.arguments import FAILURE_ARGUMENTS, RANKED_ARGUMENTS, FailureArgs, SimilarArgs
from resolvers.comparison.search import checked_text
from resolvers.context import Context
from resolvers.errors import BadArgument
from resolvers.failure_members import first_pages
from resolvers.failure_modes import failure_modes
from resolvers.replay import DEFAULT_REPLAY_PAGE, MAX_REPLAY_PAGE, replay_page
from resolvers.sessions import search_list, search_sessions, similar_list, similar_sessions
from schema.failure_modes import FailureMemberPage, FailureModes
from schema.replay import ReplayEntry
from schema.search import SessionSearch
from schema.sessions import RuntimeSession, SimilarSessions
from similar_sessions.answers import to_json
from similar_sessions.mcp_tools import LEFT_OUT
from transfer.formats.spans import session_id as conversation_session
from values import credentials

# Each argument by the tool's spelling of it.
RANKED_NAMES = {a.field: a.rest_name for a in RANKED_ARGUMENTS} | {"statuses": "status"}
FAILURE_NAMES = {a.field: a.rest_name for a in FAILURE_ARGUMENTS} | {"statuses": "status"}
NOT_FOUND = "no session of this account has this id or conversation id"
LAST_POSITION = UUID(int=2**128 - 1)  # after every turn of an ordinal


class NotFound(Exception):
    """No session of the caller's account by that id: another account's looks the same."""

    def __init__(self, argument: str) -> None:
        super().__init__(f"{argument}: {NOT_FOUND}")
        self.argument = argument


async def session_of(context: Context, raw: str) -> SessionRow:
    """The caller's session by its id, else by the conversation id it was ingested under."""
    try:
        row = await context.loaders.sessions.load(UUID(raw))
    except ValueError:
        row = None
    if row is None and 0 < len(raw) <= 500:
        account_id = context.principal.account_id
        row = await context.loaders.sessions.load(conversation_session(account_id, raw))
    if row is None:
        raise NotFound("session_id")
    return row


def _ranked(arguments: dict[str, Any], ranked: tuple[str, ...], context: Context) -> SimilarArgs:
    values = {"statuses" if k == "status" else k: v for k, v in arguments.items()}
    return SimilarArgs.checked(values, names=RANKED_NAMES, ranked=ranked, cursors=context.cursors)


async def find_similar(context: Context, arguments: dict[str, Any]) -> dict[str, Any]:
    row = await session_of(context, arguments.pop("session_id"))
    args = _ranked(arguments, similar_list(row.id), context)
    result = await similar_sessions(context, row.id, args, terms=True)
    assert result is not None, "the session was read through the same account"
    return to_json(result, SimilarSessions, LEFT_OUT)  # type: ignore[no-any-return]


async def search(context: Context, arguments: dict[str, Any]) -> dict[str, Any]:
    text = checked_text(arguments.pop("description"), "description")
    args = _ranked(arguments, search_list(context.principal.account_id, text), context)
    result = await search_sessions(context, text, args, terms=True)
    return to_json(result, SessionSearch, LEFT_OUT)  # type: ignore[no-any-return]


async def failures(context: Context, arguments: dict[str, Any]) -> dict[str, Any]:
    values = {"statuses" if k == "status" else k: v for k, v in arguments.items()}
    args = FailureArgs.checked(
        values,
        names=FAILURE_NAMES,
        account_id=context.principal.account_id,
        cursors=context.cursors,
    )
    result = await failure_modes(context, replace(args, include_match_text=True), terms=True)
    body: dict[str, Any] = to_json(result, FailureModes, LEFT_OUT)
    pages = await first_pages(context, result.groups, terms=True)
    for group, page in zip(body["groups"], pages, strict=True):
        group["members"] = to_json(page, FailureMemberPage, LEFT_OUT)
    return body


def replay_after(context: Context, session: UUID, from_turn: int) -> str | None:
    """The replay cursor of a page that starts at the turn `from_turn` (None: the first)."""
    if from_turn == 0:
        return None
    return context.cursors.replay(session, (from_turn - 1, LAST_POSITION))


async def get_session(context: Context, arguments: dict[str, Any]) -> dict[str, Any]:
    turns = arguments.get("turns", DEFAULT_REPLAY_PAGE)
    if not 1 <= turns <= MAX_REPLAY_PAGE:
        raise BadArgument("turns", f"must be between 1 and {MAX_REPLAY_PAGE}, got {turns}")
    from_turn = arguments.get("from_turn", 0)
    if from_turn < 0:
        raise BadArgument("from_turn", f"must be 0 or more, got {from_turn}")
    row = await session_of(context, arguments["session_id"])
    after = replay_after(context, row.id, from_turn)
    rows, more = await replay_page(context, row.id, turns, after)
    body: dict[str, Any] = to_json(RuntimeSession.of(row), RuntimeSession)
    nodes = []
    for turn in rows:
        whole = await credentials.shown_off_loop(turn.content)
        shown = context.content.take(whole)
        cut = len(turn.content) < turn.content_chars or len(shown) < len(whole)
        entry = to_json(turn, ReplayEntry)
        nodes.append({**entry, "content": shown, "content_truncated": cut})
    body["replay_page"] = {"nodes": nodes, "has_next_page": more}
    return body


RUNS: dict[str, Callable[[Context, dict[str, Any]], Awaitable[dict[str, Any]]]] = {
    "find_similar_sessions": find_similar,
    "search_sessions": search,
    "failure_modes": failures,
    "get_session": get_session,
}
