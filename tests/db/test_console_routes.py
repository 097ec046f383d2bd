"""The console's pages and static files, over plain HTTP: no key needed, locked-down headers."""

from __future__ import annotations

import re
from importlib.resources import files

import httpx
import pytest

from similar_sessions.console.routes import CONTENT_SECURITY_POLICY

STATIC_FILES = [
    "index.html",
    "app.js",
    "api.js",
    "dom.js",
    "queries.js",
    "sessions.js",
    "similar.js",
    "style.css",
]
EXPECTED_CSP = (
    "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; "
    "img-src 'self' data:; base-uri 'none'; form-action 'self'; frame-ancestors 'none'"
)


def test_the_policy_is_the_strict_one() -> None:
    assert CONTENT_SECURITY_POLICY == EXPECTED_CSP


async def test_the_page_is_served_without_a_key_and_with_strict_headers(
    client: httpx.AsyncClient,
) -> None:
    response = await client.get("/console/runtime-sessions", params={"sessionId": "x"})
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("text/html")
    assert response.headers["content-security-policy"] == EXPECTED_CSP
    assert response.headers["x-content-type-options"] == "nosniff"
    assert response.headers["referrer-policy"] == "no-referrer"
    assert '<script type="module" src="/console/static/app.js">' in response.text


@pytest.mark.parametrize(
    ("name", "media_type"),
    [("app.js", "javascript"), ("similar.js", "javascript"), ("style.css", "text/css")],
)
async def test_static_files_are_served_with_the_same_headers(
    client: httpx.AsyncClient, name: str, media_type: str
) -> None:
    response = await client.get(f"/console/static/{name}")
    assert response.status_code == 200
    assert media_type in response.headers["content-type"]
    assert response.headers["content-security-policy"] == EXPECTED_CSP
    assert response.headers["x-content-type-options"] == "nosniff"


async def test_an_unknown_static_file_is_404(client: httpx.AsyncClient) -> None:
    response = await client.get("/console/static/nope.js")
    assert response.status_code == 404
    assert response.headers["content-security-policy"] == EXPECTED_CSP


async def test_the_root_redirects_to_the_console(client: httpx.AsyncClient) -> None:
    response = await client.get("/")
    assert response.status_code in (302, 307)
    assert response.headers["location"] == "/console/runtime-sessions"


async def test_graphql_still_needs_a_key(client: httpx.AsyncClient) -> None:
    response = await client.post("/graphql", json={"query": "{ viewer { name } }"})
    assert response.status_code == 401
    assert "content-security-policy" not in response.headers


def test_static_files_ship_as_package_data() -> None:
    static = files("similar_sessions.console").joinpath("static")
    for name in STATIC_FILES:
        assert static.joinpath(name).is_file(), name


def test_the_console_needs_nothing_from_other_origins() -> None:
    """Offline and CSP-clean: no remote URL, no inline script or style, no innerHTML."""
    static = files("similar_sessions.console").joinpath("static")
    for name in STATIC_FILES:
        text = static.joinpath(name).read_text(encoding="utf-8")
        assert not re.search(r"(?:https?:)?//[a-z0-9.-]+\.[a-z]{2,}", text, re.I), name
        assert "innerHTML" not in text, name
        assert " style=" not in text, name
        if name == "index.html":
            assert re.findall(r"<script(?![^>]*\bsrc=)", text) == [], "inline script"
            assert "<style" not in text
