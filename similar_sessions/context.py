"""The resolvers' per-request Context, built from an authenticated HTTP request."""

from __future__ import annotations

from starlette.requests import HTTPConnection

from resolvers.context import Context


def request_context(connection: HTTPConnection) -> Context:
    state = connection.app.state
    return Context(services=state.services, principal=connection.state.principal)
