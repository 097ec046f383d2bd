"""The resolvers' per-request Context, built from an authenticated HTTP request."""

from __future__ import annotations

from starlette.requests import HTTPConnection

from data.secrets import deployment_secret
from resolvers.budgets import ContentBudget, RequestBudget
from resolvers.context import Context
from resolvers.cursors import Cursors
from resolvers.services import share_reads
from values import credentials


async def cursors(connection: HTTPConnection) -> Cursors:
    """The deployment's cursor codec, its secret read once per process: at start-up, or by
    the first request when the server ran no lifespan."""
    state = connection.app.state
    if getattr(state, "cursors", None) is None:
        state.cursors = Cursors(await deployment_secret(state.services.engine, "cursor"))
    codec: Cursors = state.cursors
    return codec


async def request_context(connection: HTTPConnection) -> Context:
    """The request's context, its comparisons granted by the Cost admission priced; its reads
    share the request's few connections, and its texts are shown as its account shows
    credentials, from here on."""
    state = connection.app.state
    share_reads()
    credentials.show_for(connection.state.principal.features)
    return Context.of(
        state.services,
        connection.state.principal,
        await cursors(connection),
        ContentBudget(state.settings.replay_content_chars),
        RequestBudget(getattr(connection.state, "cost", None)),
    )
