"""`similar-sessions mcp`: the MCP server over stdio for a local client, as the account of the
key in SIMILAR_SESSIONS_API_KEY, with the same doors as the API (its rates, fair share and
budgets counted in this process, as each API process counts its own)."""

from __future__ import annotations

import os

from config.settings import Settings
from data.accounts import Principal, principal_for_key
from data.secrets import deployment_secret
from resolvers.cursors import Cursors
from similar_sessions.admission import Doors
from similar_sessions.app import open_engines, services_of
from similar_sessions.auth import REQUIRED_SCOPE
from similar_sessions.fair_queue import FairQueue
from similar_sessions.mcp_server import Edge, serve_stdio
from similar_sessions.rate_limit import RateLimits

KEY_VARIABLE = "SIMILAR_SESSIONS_API_KEY"


class KeyRefused(Exception):
    """No key, a key that opens nothing, or one without the scope: the process cannot serve."""


async def principal_of(settings: Settings, key: str | None, edge: Edge) -> Principal:
    if not key or len(key) > 512:
        raise KeyRefused(f"{KEY_VARIABLE}: set it to an API key with the {REQUIRED_SCOPE} scope")
    principal = await principal_for_key(edge.services.engine, key)
    if principal is None:
        raise KeyRefused(f"{KEY_VARIABLE}: not a valid API key (unknown or revoked)")
    if REQUIRED_SCOPE not in principal.scopes:
        raise KeyRefused(f"{KEY_VARIABLE}: this API key lacks the {REQUIRED_SCOPE} scope")
    return principal


async def run(settings: Settings) -> int:
    """Serve until the client closes stdin; KeyRefused before serving when the key cannot."""
    services = services_of(settings, *open_engines(settings))
    try:
        doors = Doors(
            RateLimits(settings.rate_limit),
            RateLimits(settings.account_rate_limit),
            FairQueue(settings.seats, settings.account_queue),
        )
        secret = await deployment_secret(services.engine, "cursor")
        edge = Edge(
            services, Cursors(secret), doors, settings.replay_turns, settings.replay_content_chars
        )
        key = os.environ.get(KEY_VARIABLE)
        principal = await principal_of(settings, key, edge)
        await serve_stdio(edge, principal, key or "")
        return 0
    finally:
        await services.engine.dispose()
        await services.comparison_engine.dispose()
