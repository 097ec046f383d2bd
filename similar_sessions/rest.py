"""The compatibility route: GET /api/v1/runtime-sessions/{id}/similar.

It runs the same resolver as the GraphQL field and only renames fields."""

from __future__ import annotations

from typing import Any
from uuid import UUID

from starlette.requests import Request
from starlette.responses import JSONResponse

from resolvers.arguments import BadArgument, SimilarArgs
from resolvers.fields import similar_sessions
from resolvers.similar import MatchResult, NeighbourResult, SimilarResult
from similar_sessions.edge import context_for, not_found

_REST_NAMES = {
    "limit": "limit",
    "max_matches_per_session": "max_matches_per_session",
    "window_days": "window_days",
    "cursor": "cursor",
}
_KNOWN = {"limit", "max_matches_per_session", "window_days", "include_match_text", "cursor"}


def _int(request: Request, name: str, default: int | None) -> int | None:
    raw = request.query_params.get(name)
    if raw is None:
        return default
    try:
        return int(raw)
    except ValueError:
        raise BadArgument(name, f"must be a whole number, got {raw[:40]!r}") from None


def _bool(request: Request, name: str, default: bool) -> bool:
    raw = request.query_params.get(name)
    if raw is None:
        return default
    if raw.lower() in {"true", "1"}:
        return True
    if raw.lower() in {"false", "0"}:
        return False
    raise BadArgument(name, f"must be true or false, got {raw[:40]!r}")


def parse_args(request: Request) -> SimilarArgs:
    unknown = sorted(set(request.query_params) - _KNOWN)
    if unknown:
        raise BadArgument(unknown[0][:40], "is not a parameter of this route")
    limit = _int(request, "limit", 5)
    max_matches = _int(request, "max_matches_per_session", 2)
    assert limit is not None and max_matches is not None
    return SimilarArgs.checked(
        limit=limit,
        max_matches_per_session=max_matches,
        window_days=_int(request, "window_days", None),
        include_match_text=_bool(request, "include_match_text", True),
        cursor=request.query_params.get("cursor"),
        names=_REST_NAMES,
    )


async def similar_route(request: Request) -> JSONResponse:
    raw_id = request.path_params["runtime_session_id"]
    try:
        session_id = UUID(raw_id)
    except ValueError:
        raise BadArgument("runtime_session_id", "is not a UUID") from None
    args = parse_args(request)
    result = await similar_sessions(context_for(request), session_id, args)
    if result is None:
        return not_found()
    return JSONResponse(payload(result))


def payload(r: SimilarResult) -> dict[str, Any]:
    body: dict[str, Any] = {
        "runtime_session_id": str(r.runtime_session_id),
        "model_identity": r.model_identity,
        "embedded_chunks": r.embedded_chunks,
        "probe_chunks": r.probe_chunks,
        "pending_chunks": r.pending_chunks,
        "window_days": r.args.window_days,
        "limit": r.args.limit,
        "max_matches_per_session": r.args.max_matches_per_session,
        "degraded": {
            "semantic": r.degraded.semantic,
            "reasons": list(r.degraded.reasons),
            "detail": r.degraded.detail,
        },
        "elapsed_ms": r.elapsed_ms,
        "results": [_neighbour(n) for n in r.results],
    }
    if r.next_cursor is not None:
        body["next_cursor"] = r.next_cursor
    return body


def _neighbour(n: NeighbourResult) -> dict[str, Any]:
    s = n.session
    return {
        "runtime_session_id": str(s.id),
        "session_source_type": s.source_type,
        "session_source_id": s.source_id,
        "session_reference": s.reference,
        "title": s.title,
        "started_at": s.started_at.isoformat(),
        "last_activity_at": s.last_activity_at.isoformat(),
        "score": n.score,
        "similarity": n.similarity,
        "band": n.band.value,
        "matched_chunk_count": n.matched_chunk_count,
        "matches": [_match(m) for m in n.matches],
    }


def _match(m: MatchResult) -> dict[str, Any]:
    c, p = m.chunk, m.probe
    return {
        **_passage(c),
        "similarity": m.similarity,
        "band": m.band.value,
        "redaction_state": c.redaction_state,
        "text": m.text,
        "probe": _passage(p),
    }


def _passage(c: Any) -> dict[str, Any]:
    return {
        "document_id": str(c.id),
        "source_kind": c.source_kind,
        "source_id": None if c.source_id is None else str(c.source_id),
        "chunk_index": c.chunk_index,
        "occurred_at": c.occurred_at.isoformat(),
        "role": c.role,
    }
