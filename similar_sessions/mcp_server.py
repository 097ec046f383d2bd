"""The MCP server (the official SDK's low-level Server): the tools and `session://{id}`
resources, served over streamable HTTP at /mcp (stateless, JSON answers) and over stdio
(`similar-sessions mcp`). Each call runs as its caller (`CALLER`: set by the HTTP endpoint
from the request AuthMiddleware authenticated, or once for a stdio process), admitted by
similar_sessions/mcp_admission.py."""

from __future__ import annotations

import json
from contextvars import ContextVar
from dataclasses import dataclass
from functools import cache
from importlib import metadata
from typing import Any

import mcp_types as types
import structlog
from mcp.server.context import ServerRequestContext
from mcp.server.lowlevel import Server
from mcp.server.stdio import stdio_server
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
from mcp.shared.exceptions import MCPError
from starlette.requests import HTTPConnection
from starlette.types import Receive, Scope, Send

from data.accounts import Principal, hash_key
from resolvers.budgets import ContentBudget
from resolvers.context import Context
from resolvers.cursors import Cursors
from resolvers.services import Services, share_reads
from schema.errors import answer_of
from schema.failure_modes import FailureMemberPage, FailureModes
from schema.replay import ReplayEntry
from schema.search import SessionSearch
from schema.sessions import RuntimeSession, SimilarSessions
from similar_sessions.admission import Doors, Refused
from similar_sessions.auth import bearer_key
from similar_sessions.mcp_admission import admitted
from similar_sessions.mcp_calls import RUNS, NotFound
from similar_sessions.mcp_shapes import output_schema
from similar_sessions.mcp_text import TEXTS
from similar_sessions.mcp_tools import LEFT_OUT, TOOLS, checked
from similar_sessions.request_context import cursors
from values import credentials

log = structlog.get_logger(__name__)
PATH = "/mcp"
RESOURCE_PREFIX = "session://"
INSTRUCTIONS = (
    "Answers about this account's recorded agent sessions: which sessions went the same way "
    "as one (find_similar_sessions), which match a description (search_sessions), which "
    "failures recur and which are new (failure_modes), and one session's replay (get_session)."
)


@dataclass(frozen=True, slots=True)
class Edge:
    """What a call needs of the process: its services, cursor codec and doors."""

    services: Services
    cursors: Cursors
    doors: Doors
    replay_turns: int
    content_chars: int


@dataclass(frozen=True, slots=True)
class Caller:
    """Who calls, through which process: a key's principal and its hash (rates count it)."""

    edge: Edge
    principal: Principal
    key_id: str

    def context(self) -> Context:
        """A call's context, as request_context builds a request's."""
        share_reads()
        credentials.show_for(self.principal.features)
        content = ContentBudget(self.edge.content_chars)
        return Context.of(self.edge.services, self.principal, self.edge.cursors, content)


CALLER: ContextVar[Caller] = ContextVar("mcp_caller")


def _with_members(answer: dict[str, Any]) -> dict[str, Any]:
    group = answer["properties"]["groups"]["items"]
    group["properties"]["members"] = output_schema(FailureMemberPage, LEFT_OUT)
    group["required"].append("members")
    return answer


def _session_schema() -> dict[str, Any]:
    answer = output_schema(RuntimeSession, LEFT_OUT)
    turn = output_schema(ReplayEntry, LEFT_OUT)
    turn["properties"] |= {"content": {"type": "string"}, "content_truncated": {"type": "boolean"}}
    turn["required"] += ["content", "content_truncated"]
    page = {"nodes": {"type": "array", "items": turn}, "has_next_page": {"type": "boolean"}}
    answer["properties"]["replay_page"] = {
        "type": "object",
        "properties": page,
        "required": list(page),
    }
    answer["required"].append("replay_page")
    return answer


@cache
def output_schemas() -> dict[str, dict[str, Any]]:
    """Each tool's output schema, generated from its answer's GraphQL type."""
    return {
        "find_similar_sessions": output_schema(SimilarSessions, LEFT_OUT),
        "search_sessions": output_schema(SessionSearch, LEFT_OUT),
        "failure_modes": _with_members(output_schema(FailureModes, LEFT_OUT)),
        "get_session": _session_schema(),
    }


async def list_tools(_: Any, __: Any) -> types.ListToolsResult:
    read_only = types.ToolAnnotations(read_only_hint=True, idempotent_hint=True)
    return types.ListToolsResult(
        tools=[
            types.Tool(
                name=t.name,
                description=t.description,
                input_schema=t.input_schema,
                output_schema=output_schemas()[t.name],
                annotations=read_only,
            )
            for t in TOOLS
        ]
    )


async def answer(tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
    """The tool's structured answer for the caller, within the API's doors."""
    caller = CALLER.get()
    edge = caller.edge
    async with admitted(
        edge.doors, edge.replay_turns, caller.principal, caller.key_id, tool, arguments
    ):
        context = caller.context()
        body = await RUNS[tool](context, dict(arguments))
        await context.services.turns.take(str(caller.principal.account_id))
        return body


def unexpected(exc: Exception) -> MCPError:
    """An error no mapping covers: logged by type, answered without its words (as GraphQL
    masks it)."""
    log.error("mcp_unexpected_error", error_type=type(exc).__name__)
    return MCPError(types.INTERNAL_ERROR, "internal error")


def refusal(exc: Exception) -> tuple[str, dict[str, Any]] | None:
    """An expected error's code and what it names (the argument, the limit); None else."""
    if isinstance(exc, NotFound):
        return "not_found", {"argument": exc.argument}
    if isinstance(exc, Refused):
        return exc.code, {"retry_after_s": exc.retry_after_s}
    known = answer_of(exc)
    return None if known is None else (known.rest_code, known.details(exc))


async def call_tool(_: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
    """A tool's answer: structured content and its text; an expected error as a tool error
    (its code, what it names and why); anything else masked."""
    try:
        arguments = checked(params.name, params.arguments)
        body = await answer(params.name, arguments)
    except Exception as exc:
        refused = refusal(exc)
        if refused is None:
            raise unexpected(exc) from exc
        code, details = refused
        error = {"error": code, "detail": str(exc), **details}
        text = types.TextContent(text=f"{code}: {exc}")
        return types.CallToolResult(content=[text], structured_content=error, is_error=True)
    text = types.TextContent(text=TEXTS[params.name](body))
    return types.CallToolResult(content=[text], structured_content=body)


async def list_templates(_: Any, __: Any) -> types.ListResourceTemplatesResult:
    template = types.ResourceTemplate(
        uri_template=RESOURCE_PREFIX + "{id}",
        name="session",
        description="A session of the account and the first page of its replay, as "
        "get_session answers it (by its id or conversation id).",
        mime_type="application/json",
    )
    return types.ListResourceTemplatesResult(resource_templates=[template])


async def read_resource(
    _: ServerRequestContext[Any], params: types.ReadResourceRequestParams
) -> types.ReadResourceResult:
    """`session://{id}`: get_session's answer as JSON; an error names what was wrong."""
    uri = str(params.uri)
    if not uri.startswith(RESOURCE_PREFIX):
        raise MCPError(types.INVALID_PARAMS, f"uri: not a session:// resource: {uri[:80]!r}")
    try:
        body = await answer("get_session", {"session_id": uri.removeprefix(RESOURCE_PREFIX)})
    except Exception as exc:
        refused = refusal(exc)
        if refused is None:
            raise unexpected(exc) from exc
        raise MCPError(types.INVALID_PARAMS, f"{refused[0]}: {exc}", refused[1]) from None
    contents = types.TextResourceContents(
        uri=uri, mime_type="application/json", text=json.dumps(body)
    )
    return types.ReadResourceResult(contents=[contents])


def make_server() -> Server[Any]:
    """The MCP server: the tools and the session resources."""
    return Server(
        "similar-sessions",
        version=metadata.version("similar-sessions"),
        instructions=INSTRUCTIONS,
        on_list_tools=list_tools,
        on_call_tool=call_tool,
        on_list_resource_templates=list_templates,
        on_read_resource=read_resource,
    )


class Endpoint:
    """/mcp: streamable HTTP (stateless, JSON answers), each request run as the caller its
    key names (AuthMiddleware authenticated it). A stateless request needs nothing of another,
    so each runs its own session manager: nothing outlives it, and the app's lifespan (which
    a test may enter and leave in different tasks) holds no MCP task group."""

    def __init__(self) -> None:
        self.server = make_server()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        connection = HTTPConnection(scope)
        state = connection.app.state
        settings = state.settings
        edge = Edge(
            state.services,
            await cursors(connection),
            Doors.of(state),
            settings.replay_turns,
            settings.replay_content_chars,
        )
        key_id = hash_key(bearer_key(connection) or "").hex()
        token = CALLER.set(Caller(edge, scope["state"]["principal"], key_id))
        manager = StreamableHTTPSessionManager(app=self.server, stateless=True, json_response=True)
        try:
            async with manager.run():
                await manager.handle_request(scope, receive, send)
        finally:
            CALLER.reset(token)


async def serve_stdio(edge: Edge, principal: Principal, key: str) -> None:
    """Serve one client over this process's stdin and stdout, as the key's principal."""
    CALLER.set(Caller(edge, principal, hash_key(key).hex()))
    server = make_server()
    async with stdio_server() as (read, write):
        await server.run(read, write, server.create_initialization_options())
