"""GraphiQL at /graphql: served from the package (it works with every other origin blocked),
under a strict policy, with a note on sending the key; the key is never stored."""

from __future__ import annotations

import json

import pytest
from playwright.async_api import Route, expect
from sqlalchemy.ext.asyncio import AsyncEngine

from tests.support.console_browser import Tab
from tests.support.world import World

pytestmark = pytest.mark.browser


async def test_graphiql_runs_offline_and_never_stores_the_key(
    engine: AsyncEngine, tab: Tab
) -> None:
    world = World()
    _, key = world.account("acme")
    await world.write(engine)
    elsewhere: list[str] = []

    async def only_this_server(route: Route) -> None:
        if route.request.url.startswith(tab.base):
            await route.continue_()
        else:
            elsewhere.append(route.request.url)
            await route.abort()

    await tab.page.context.route("**/*", only_this_server)
    await tab.open("/graphql")
    page = tab.page
    await expect(page.locator("#key-note")).to_contain_text('{"Authorization": "Bearer <key>"}')
    headers = page.locator(".graphiql-editor-tool .graphiql-editor:not(.hidden) .CodeMirror")
    await expect(headers).to_contain_text('"Authorization": "Bearer <key>"')

    await headers.evaluate(
        "(el, key) => el.CodeMirror.setValue(JSON.stringify({Authorization: `Bearer ${key}`}))",
        key,
    )
    await page.locator(".graphiql-query-editor .CodeMirror").evaluate(
        "(el) => el.CodeMirror.setValue('query Viewer { viewer { name scopes } }')"
    )
    await page.get_by_role("button", name="Execute query (Ctrl-Enter)").click()
    result = page.locator(".graphiql-response")
    await expect(result).to_contain_text('"name": "acme"')
    sent = [r for r in tab.graphql if "viewer" in (r.post_data or "")]
    assert sent and sent[-1].headers["authorization"] == f"Bearer {key}"

    # GraphiQL writes the query it ran to its storage after a debounce, not with the answer
    await page.wait_for_function("() => window.localStorage.getItem('graphiql:query') !== null")
    stored = json.dumps(await page.evaluate("() => ({...window.localStorage})"))
    assert "graphiql:query" in stored and "graphiql:queries" in stored, "its history is kept"
    assert key not in stored and "Bearer" not in stored
    await page.reload()
    await expect(
        page.locator(".graphiql-editor-tool .graphiql-editor:not(.hidden) .CodeMirror")
    ).to_contain_text('"Authorization": "Bearer <key>"')
    await expect(
        page.locator(".graphiql-editor-tool .graphiql-editor:not(.hidden) .CodeMirror")
    ).not_to_contain_text(key)
    assert elsewhere == [], "GraphiQL asked another origin"
    assert tab.problems == []
