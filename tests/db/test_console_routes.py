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
    "degraded.js",
    "dom.js",
    "failures.js",
    "alerts.js",
    "filter.js",
    "highlight.js",
    "legs.js",
    "live.js",
    "markdown.js",
    "memory.js",
    "passages.js",
    "queries.js",
    "replay.js",
    "search.js",
    "sessions.js",
    "similar.js",
    "timeline.js",
    "style.css",
    "graphiql.html",
    "graphiql.js",
    "graphiql.css",
]
VENDORED = [
    "vendor/README.md",
    "vendor/graphiql/graphiql.min.js",
    "vendor/graphiql/graphiql.min.css",
    "vendor/graphiql/LICENSE",
    "vendor/react/react.production.min.js",
    "vendor/react/LICENSE",
    "vendor/react_dom/react-dom.production.min.js",
    "vendor/react_dom/LICENSE",
    "vendor/markdown_it/markdown-it.esm.min.mjs",
    "vendor/markdown_it/LICENSE",
    "vendor/markdown_it/LICENSE-BUNDLED.txt",
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
    [
        ("app.js", "javascript"),
        ("similar.js", "javascript"),
        ("style.css", "text/css"),
        # A module script runs only when served as JavaScript.
        ("vendor/markdown_it/markdown-it.esm.min.mjs", "javascript"),
    ],
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
    for name in STATIC_FILES + VENDORED:
        assert static.joinpath(name).is_file(), name


def test_the_package_declares_the_vendored_files() -> None:
    """An install carries every static file: each directory is a declared package whose
    package data is all its files."""
    import tomllib
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    setuptools = tomllib.loads((root / "pyproject.toml").read_text(encoding="utf-8"))["tool"][
        "setuptools"
    ]
    static = root / "similar_sessions" / "console" / "static"
    for path in static.rglob("*"):
        if path.is_file() and "__pycache__" not in path.parts:
            package = ".".join(path.parent.relative_to(root).parts)
            assert package in setuptools["packages"], path
            assert setuptools["package-data"][package] == ["*"], path


GRAPHIQL_CSP = (
    "default-src 'none'; script-src 'self'; style-src 'self'; font-src data:; "
    "connect-src 'self'; img-src 'self' data:; base-uri 'none'; form-action 'none'; "
    "frame-ancestors 'none'"
)


async def test_graphiql_is_served_from_the_package_under_a_strict_policy(
    client: httpx.AsyncClient,
) -> None:
    page = await client.get("/graphql", headers={"accept": "text/html"})
    assert page.status_code == 200
    assert page.headers["content-security-policy"] == GRAPHIQL_CSP
    assert page.headers["x-content-type-options"] == "nosniff"
    scripts = re.findall(r'<script src="([^"]+)"', page.text)
    assert scripts == [
        "/console/static/vendor/react/react.production.min.js",
        "/console/static/vendor/react_dom/react-dom.production.min.js",
        "/console/static/vendor/graphiql/graphiql.min.js",
        "/console/static/graphiql.js",
    ]
    assert "Authorization" in page.text and "Bearer" in page.text
    for src in [*scripts, "/console/static/vendor/graphiql/graphiql.min.css"]:
        asset = await client.get(src)
        assert asset.status_code == 200, src


def test_the_console_needs_nothing_from_other_origins() -> None:
    """Offline and CSP-clean: no remote URL, no inline script or style, no innerHTML."""
    static = files("similar_sessions.console").joinpath("static")
    for name in STATIC_FILES:
        text = static.joinpath(name).read_text(encoding="utf-8")
        assert not re.search(r"(?:https?:)?//[a-z0-9.-]+\.[a-z]{2,}", text, re.I), name
        assert "innerHTML" not in text and "insertAdjacentHTML" not in text, name
        assert "document.write" not in text and "DOMParser" not in text, name
        assert " style=" not in text, name
        if name.endswith(".html"):
            assert re.findall(r"<script(?![^>]*\bsrc=)", text) == [], "inline script"
            assert "<style" not in text
