"""One attempt at delivering an alert, as Standard Webhooks: `webhook-id` (the alert's, the same
on every attempt), `webhook-timestamp` and `webhook-signature` (HMAC-SHA256 by the
`standardwebhooks` library). The URL is checked again and its host resolved, every address
checked, and the connection made to the address checked (TLS still verifies the host's
name); no redirect is followed, every phase is bounded, and at most 1 KB of the answer is kept."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

import httpx
from standardwebhooks.webhooks import Webhook

from alerts.urls import AllowedHosts, RefusedUrl, checked_url, resolved
from data.alert_deliveries import Due, Failure

KEPT_BYTES = 1024
GIVE_UP_AFTER = timedelta(hours=24)
USER_AGENT = "similar-sessions-alerts/1"


@dataclass(frozen=True, slots=True)
class DeliveryConfig:
    allowed: AllowedHosts
    timeout_s: float
    retry_base_s: float
    max_failures: int


@dataclass(frozen=True, slots=True)
class Answered:
    status: int
    response: str


def signed_headers(due: Due, now: datetime) -> dict[str, str]:
    """The Standard Webhooks headers of this attempt."""
    signature = Webhook(due.secret).sign(due.webhook_id, now, due.body)
    return {
        "webhook-id": due.webhook_id,
        "webhook-timestamp": str(int(now.timestamp())),
        "webhook-signature": signature,
        "content-type": "application/json",
        "user-agent": USER_AGENT,
    }


def retry_at(due: Due, now: datetime, base_s: float) -> datetime | None:
    """When a failed attempt is tried again: base_s after the first, doubling; None once that
    is past 24 h after the alert was decided (it is given up)."""
    at = now + timedelta(seconds=base_s * 2 ** min(due.attempts, 32))
    return at if at <= due.created_at + GIVE_UP_AFTER else None


async def attempt(due: Due, config: DeliveryConfig) -> Answered | Failure:
    """One POST of the alert; its 2xx answer, or why it failed."""
    now = datetime.now(UTC)
    try:
        target = checked_url(due.url, config.allowed)
        async with asyncio.timeout(config.timeout_s):  # the resolver too is bounded
            address = await resolved(target, config.allowed)
    except RefusedUrl as exc:
        return Failure(None, f"refused: {exc}", None)
    except TimeoutError:
        return Failure(None, f"{due.url}: its host did not resolve in time", None)
    host = f"[{address}]" if address.version == 6 else str(address)
    url = f"{target.scheme}://{host}:{target.port}{target.target}"
    default_port = 443 if target.scheme == "https" else 80
    headers = signed_headers(due, now)
    headers["host"] = target.host if target.port == default_port else f"{target.host}:{target.port}"
    extensions = {"sni_hostname": target.host} if target.scheme == "https" else {}
    timeout = httpx.Timeout(config.timeout_s)
    try:
        async with (
            asyncio.timeout(config.timeout_s * 2),
            httpx.AsyncClient(timeout=timeout, follow_redirects=False, trust_env=False) as client,
        ):
            request = client.build_request(
                "POST", url, content=due.body.encode(), headers=headers, extensions=extensions
            )
            response = await client.send(request, stream=True)
            try:
                kept = await _kept(response)
            finally:
                await response.aclose()
    except (httpx.HTTPError, TimeoutError, OSError) as exc:
        return Failure(None, f"{type(exc).__name__}: {exc}"[:500] or type(exc).__name__, None)
    if 200 <= response.status_code < 300:
        return Answered(response.status_code, kept)
    why = "a redirect (not followed)" if 300 <= response.status_code < 400 else "not 2xx"
    return Failure(response.status_code, f"HTTP {response.status_code}: {why}", kept)


async def _kept(response: httpx.Response) -> str:
    """At most KEPT_BYTES of the body, read no further."""
    kept = b""
    async for chunk in response.aiter_raw():
        kept += chunk
        if len(kept) >= KEPT_BYTES:
            break
    return kept[:KEPT_BYTES].decode("utf-8", errors="replace")
