"""The GraphQL endpoint as an ASGI app, and the GraphiQL page it serves to browsers (the
console's own page with vendored GraphiQL, not strawberry's, which loads it from a CDN)."""

from __future__ import annotations

from typing import Any

from starlette.requests import HTTPConnection
from starlette.types import Receive, Scope, Send
from strawberry.asgi import GraphQL

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


class GraphQLApp(GraphQL[Context, None]):
    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and is_graphiql_page(HTTPConnection(scope)):
            # The IDE's page runs no query and needs no key (AuthMiddleware lets it pass).
            await graphiql_page()(scope, receive, send)
            return
        await super().__call__(scope, receive, send)

    async def get_context(self, request: Any, response: Any) -> Context:
        return await request_context(request)
