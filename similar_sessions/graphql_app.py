"""The GraphQL endpoint as an ASGI app, and the GraphiQL page it serves to browsers (the
console's own page with vendored GraphiQL, not strawberry's, which loads it from a CDN)."""

from __future__ import annotations

import json
from typing import Any

import orjson
from cross_web import AsyncHTTPRequestAdapter, HTTPException
from starlette.requests import HTTPConnection
from starlette.types import Receive, Scope, Send
from strawberry.asgi import GraphQL
from strawberry.http import GraphQLRequestData
from strawberry.http.parse_content_type import parse_content_type

from resolvers.context import Context
from similar_sessions.console.routes import graphiql_page
from similar_sessions.request_context import request_context


def is_graphiql_page(connection: HTTPConnection) -> bool:
    """A browser asking /graphql for the GraphiQL page, when GraphiQL is on."""
    return (
        connection.scope["method"] == "GET"
        and connection.url.path == "/graphql"
        and "text/html" in connection.headers.get("accept", "")
        and bool(connection.app.state.settings.graphiql)
    )


NOT_AN_OBJECT = 'The request body must be a JSON object: {"query": "...", "variables": {...}}.'
NESTED_TOO_DEEP = "The request's JSON is nested too deeply to be read."
NOT_UTF8 = "The request body must be UTF-8 (RFC 8259): it holds bytes that are not."


class GraphQLApp(GraphQL[Context, None]):
    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and is_graphiql_page(HTTPConnection(scope)):
            # The IDE's page runs no query and needs no key (AuthMiddleware lets it pass).
            await graphiql_page()(scope, receive, send)
            return
        await super().__call__(scope, receive, send)

    def decode_json(self, data: str | bytes) -> object:
        """JSON as strawberry reads it (a body, or GET's variables and extensions); nested
        past what the decoder can follow, or bytes that are not UTF-8 (anywhere in it: the
        body is decoded whole before it is parsed), it is answered 400 rather than a 500."""
        try:
            text = data.decode("utf-8") if isinstance(data, bytes) else data
        except UnicodeDecodeError:
            raise HTTPException(400, NOT_UTF8) from None
        try:
            return json.loads(text)
        except RecursionError:
            raise HTTPException(400, NESTED_TOO_DEEP) from None

    def encode_json(self, data: object) -> bytes:
        """The answer as JSON, by orjson: the largest answer the limits allow (2.2 MB) takes
        under 1 ms of the event loop, against 18 ms by the standard library's encoder."""
        return orjson.dumps(data)

    async def parse_http_body(
        self, request: AsyncHTTPRequestAdapter
    ) -> GraphQLRequestData | list[GraphQLRequestData]:
        """The operation asked for; a JSON body that is neither an object nor a list (which
        strawberry reads as a batch, and refuses) is answered 400, not 500."""
        content_type, _ = parse_content_type(request.content_type or "")
        if request.method == "POST" and "application/json" in content_type:
            # Parsed again by strawberry: a body is at most 64 KiB, and Starlette keeps it read.
            body = self.parse_json(await request.get_body())
            if not isinstance(body, dict | list):
                raise HTTPException(400, NOT_AN_OBJECT)
        return await super().parse_http_body(request)

    async def get_context(self, request: Any, response: Any) -> Context:
        return await request_context(request)
