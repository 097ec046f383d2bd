"""`POST /v1/traces`: the OTLP/HTTP traces receiver (docs/ingest.md). An agent's exporter needs
only `OTEL_EXPORTER_OTLP_ENDPOINT=http://host:8000` and
`OTEL_EXPORTER_OTLP_HEADERS=Authorization=Bearer <key>`, with a key of the
`ingest_runtime_sessions` scope (similar_sessions/auth.py checks it).

The answers follow the OTLP/HTTP specification: 200 with an ExportTraceServiceResponse in the
request's encoding, only once the request is stored (transfer/live.py: the indexer makes its
spans into sessions moments later; a partial success names the spans rejected and the first
reason); 400 for a body that does not decode; 413 past
SIMILAR_SESSIONS_INGEST_BODY_BYTES, inflated or not (a gzip body is refused as it inflates);
415 for another content type or encoding; 429 with Retry-After past the account's ingest
rates (nothing of the request stored); 503 with Retry-After when the database cannot answer.
An error's body is a google.rpc.Status in the request's encoding."""

from __future__ import annotations

import asyncio
import dataclasses
import zlib

import structlog
from google.protobuf.json_format import MessageToJson
from google.rpc.status_pb2 import Status
from starlette.requests import Request
from starlette.responses import Response

from config.settings import Settings
from data.accounts import Principal
from observability.metrics import REFUSED
from resolvers.budgets import Cost
from similar_sessions.rate_limit import RateLimits, describe
from transfer.formats.otlp_wire import JSON, PROTOBUF, Checked, Undecodable, check, response
from transfer.live import accept

log = structlog.get_logger(__name__)
PATH = "/v1/traces"
OFF_LOOP_BYTES = 64 * 1024  # a body this large is inflated and checked in a thread
ENCODINGS = {PROTOBUF: PROTOBUF, "application/json": JSON}
# google.rpc.Code of each refusal, as the OTLP specification pairs them with HTTP statuses
_CODES = {400: 3, 413: 8, 415: 3, 429: 8}


class Refused(Exception):
    """The request is answered with this status and message; nothing of it is stored."""

    def __init__(self, status: int, message: str, retry_after_s: int | None = None) -> None:
        super().__init__(message)
        self.status, self.retry_after_s = status, retry_after_s


class IngestRates:
    """Each account's spans and bytes per second, per process (the settings' rates)."""

    def __init__(self, settings: Settings) -> None:
        self.spans = RateLimits(settings.ingest_span_rate, weighted=True)
        self.bytes = RateLimits(settings.ingest_byte_rate, weighted=True)

    async def admit(self, account: str, cost: Cost) -> None:
        """Count the request's spans and bytes (its Cost); Refused (429) when either rate
        would pass."""
        for rates, spent, what, name in (
            (self.spans, cost.spans, "spans", "SIMILAR_SESSIONS_INGEST_SPAN_RATE"),
            (self.bytes, cost.bytes, "bytes", "SIMILAR_SESSIONS_INGEST_BYTE_RATE"),
        ):
            if (refused := await rates.admit(account, spent)) is not None:
                rate, retry_after_s = refused
                raise Refused(
                    429,
                    f"this account sent more than {describe(rate)} {what} (per process; {name}); "
                    f"retry in {retry_after_s} s",
                    retry_after_s,
                )


async def traces(request: Request) -> Response:
    encoding = ENCODINGS.get(request.headers.get("content-type", "").split(";")[0].strip())
    try:
        if encoding is None:
            raise Refused(415, f"the body is {PROTOBUF} or application/json")
        settings: Settings = request.app.state.settings
        raw = await request.body()
        checked = await _checked(
            raw, request.headers.get("content-encoding", ""), encoding, settings
        )
        principal: Principal = request.state.principal
        # The Cost admission priced from the body's bytes, its spans counted once checked.
        priced: Cost = getattr(request.state, "cost", Cost(bytes=len(raw)))
        cost = dataclasses.replace(priced, spans=checked.accepted)
        await request.app.state.ingest_rates.admit(str(principal.account_id), cost)
    except Undecodable as exc:
        return refusal(Refused(400, str(exc)), encoding or JSON)
    except Refused as exc:
        return refusal(exc, encoding or JSON)
    if checked.accepted:  # stored as sent; the indexer makes the sessions (transfer/live.py)
        gzipped = request.headers.get("content-encoding", "").strip().lower() == "gzip"
        await accept(
            request.app.state.services.engine, principal.account_id, encoding, gzipped, raw
        )
        log.info(
            "accepted",
            spans=checked.accepted,
            rejected=checked.rejected,
            read_whole=checked.read_whole,
            bytes=len(raw),
        )
    return Response(response(checked, encoding), media_type=encoding)


async def _checked(raw: bytes, coding: str, encoding: str, settings: Settings) -> Checked:
    """The body inflated and its spans checked (otlp_wire.check: what the indexer's decoding
    will accept and reject); a large one in a thread (one hop for both), so that the event
    loop serves other accounts' requests meanwhile (a 4 MB batch takes tens of
    milliseconds)."""

    def read() -> Checked:
        return check(inflated(raw, coding, settings.ingest_body_bytes), encoding)

    return read() if len(raw) < OFF_LOOP_BYTES else await asyncio.to_thread(read)


def inflated(body: bytes, content_encoding: str, limit: int) -> bytes:
    """The body as sent, or inflated when gzipped, refused (413) as soon as it passes `limit`
    bytes: a small body that inflates to gigabytes is never inflated whole."""
    coding = content_encoding.strip().lower()
    if coding in ("", "identity"):
        if len(body) > limit:
            raise Refused(413, f"request bodies are limited to {limit} bytes")
        return body
    if coding != "gzip":
        raise Refused(415, f"the content encoding is gzip or none, not {coding!r}")
    inflater = zlib.decompressobj(16 + zlib.MAX_WBITS)
    try:
        out = inflater.decompress(body, limit + 1)
        if len(out) > limit or inflater.unconsumed_tail:
            raise Refused(413, f"request bodies are limited to {limit} bytes, inflated")
        out += inflater.flush()
    except zlib.error as exc:
        raise Refused(400, f"the gzip body does not inflate ({exc})") from None
    if not inflater.eof:
        raise Refused(400, "the gzip body ends before its end")
    return out


def refusal(refused: Refused, encoding: str) -> Response:
    """The refusal as a google.rpc.Status in the request's encoding, with Retry-After."""
    REFUSED.labels(f"ingest_{refused.status}").inc()
    status = Status(code=_CODES.get(refused.status, 2), message=str(refused))
    body = (
        status.SerializeToString()
        if encoding == PROTOBUF
        else MessageToJson(status, indent=None).encode()
    )
    headers = {} if refused.retry_after_s is None else {"Retry-After": str(refused.retry_after_s)}
    return Response(body, status_code=refused.status, media_type=encoding, headers=headers)
