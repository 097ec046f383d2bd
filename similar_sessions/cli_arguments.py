"""The `similar-sessions` command line's arguments: each command's, with its help (the commands
themselves are similar_sessions/cli.py)."""

from __future__ import annotations

import argparse
from importlib import metadata
from uuid import UUID

from data.model_indexes import BUILT_KIND
from similar_sessions.alerts_cli import alerts_arguments
from transfer.formats import FORMATS


def version() -> str:
    return metadata.version("similar-sessions")


def positive(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be 1 or more, got {value}")
    return value


def _import_arguments(imp: argparse.ArgumentParser) -> None:
    imp.add_argument(
        "--format",
        choices=sorted(FORMATS),
        default="jsonl",
        help="jsonl (the import format), messages (one chat session a line), "
        "otlp (an OTLP/JSON trace export with GenAI attributes)",
    )
    imp.add_argument(
        "--account",
        type=UUID,
        default=None,
        help="the account of sessions a line does not name; a line of another account, or "
        "of another account's session, is refused",
    )
    imp.add_argument("files", nargs="+")


FIT_HELP = (
    "fit the hnsw.ef_search of the accounts' own indexes on their vectors (those built "
    "before fits existed; every build does it)"
)


def _fit_arguments(fits: argparse.ArgumentParser) -> None:
    fits.add_argument("--all", action="store_true", help="fit again those already fitted")


MERGE_HELP = (
    "merge the tails of the accounts' own indexes that are due (the rows written since each "
    "was built, looked up exactly meanwhile) by building each again, concurrently; the "
    "indexer does it on its passes"
)


MOVE_HELP = (
    f"build every HNSW index of another kind again as {BUILT_KIND}, concurrently, beside the "
    "old one (which serves meanwhile and is dropped a minute after), and every index built "
    "before migration 0016 (its graph holds a loop's repeats): once, after an upgrade"
)


MCP_HELP = (
    "serve the MCP tools over stdio, as the account of the key in SIMILAR_SESSIONS_API_KEY "
    "(docs/mcp.md)"
)


def _merge_arguments(merges: argparse.ArgumentParser) -> None:
    merges.add_argument(
        "--all",
        action="store_true",
        help="every tail, due or not, and every index built before tails existed",
    )


def _serve_arguments(server: argparse.ArgumentParser) -> None:
    server.add_argument("--host", default="127.0.0.1")
    server.add_argument("--port", type=int, default=8000)
    server.add_argument(
        "--workers",
        type=positive,
        default=1,
        help="uvicorn worker processes (pools and rate limits are per process)",
    )


def arguments() -> argparse.ArgumentParser:
    """The command line's parser: a sub-command each, with its arguments and help."""
    top = argparse.ArgumentParser(
        prog="similar-sessions",
        description="Sessions similar to this one, on PostgreSQL + pgvector.",
    )
    top.add_argument("--version", action="version", version=f"%(prog)s {version()}")
    sub = top.add_subparsers(dest="command", required=True)
    _serve_arguments(sub.add_parser("serve", help="migrate, then serve the API and console"))
    sub.add_parser("migrate", help="bring the schema up to date")
    _import_arguments(sub.add_parser("import", help="import files (all of a file, or none of it)"))
    exp = sub.add_parser("export", help="write every account back in the import format")
    exp.add_argument("-o", "--output", default=None)
    sub.add_parser("revoke-key", help="revoke the API key read from standard input")
    index = sub.add_parser("index", help="chunk sessions and embed pending chunks")
    index.add_argument("--watch", action="store_true", help="keep indexing until stopped")
    index.add_argument(
        "--retry-failed",
        action="store_true",
        help="first put chunks the provider failed (state `failed`) back to pending",
    )
    demo = sub.add_parser("demo", help="load and index the tau-bench demo corpus, print an API key")
    demo.add_argument(
        "--lexical-only",
        action="store_true",
        help="embed it with the lexical model alone; by default all-minilm-l6-v2 embeds it too, "
        "beside the lexical model, for the search's dense leg (`make run LEXICAL=1`)",
    )
    _fit_arguments(sub.add_parser("fit-indexes", help=FIT_HELP))
    _merge_arguments(sub.add_parser("merge-indexes", help=MERGE_HELP))
    sub.add_parser("move-indexes", help=MOVE_HELP)
    sub.add_parser("mcp", help=MCP_HELP)
    alerts_arguments(sub.add_parser("alerts", help="an account's alert rules: add, list, remove"))
    return top
