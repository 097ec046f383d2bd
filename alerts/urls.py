"""Where a webhook may point: `https` anywhere public, plain `http` or an inward address (loopback,
link-local, private, reserved) only to hosts the operator allows
(SIMILAR_SESSIONS_ALERT_ALLOW_HOSTS). Checked when a rule is added, and again at delivery on
the addresses the name resolves to, the connection then made to the address checked."""

from __future__ import annotations

import asyncio
import ipaddress
import socket
from dataclasses import dataclass
from urllib.parse import urlsplit

IpAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
IpNetwork = ipaddress.IPv4Network | ipaddress.IPv6Network
MAX_URL_CHARS = 2000


class RefusedUrl(ValueError):
    """A webhook URL the rules refuse; says why."""


@dataclass(frozen=True, slots=True)
class AllowedHosts:
    """The operator's allowance: host names (lower case) and address ranges."""

    names: frozenset[str] = frozenset()
    networks: tuple[IpNetwork, ...] = ()

    @classmethod
    def parse(cls, text: str) -> AllowedHosts:
        """`host, 10.0.0.0/8, ::1` as the setting holds it; a malformed range is a ValueError."""
        names: set[str] = set()
        networks: list[IpNetwork] = []
        for item in (part.strip().lower() for part in text.split(",")):
            if not item:
                continue
            try:
                networks.append(ipaddress.ip_network(item, strict=False))
            except ValueError:
                if "/" in item:
                    raise ValueError(f"{item!r} is not an address range") from None
                names.add(item.strip("[]"))
        return cls(frozenset(names), tuple(networks))

    def allows(self, host: str, address: IpAddress | None = None) -> bool:
        if host.lower() in self.names:
            return True
        return address is not None and any(address in n for n in self.networks)


@dataclass(frozen=True, slots=True)
class Target:
    """A checked URL's parts: the connection goes to one of its host's checked addresses."""

    url: str
    scheme: str
    host: str
    port: int
    target: str  # path and query, as sent


def inward(address: IpAddress) -> bool:
    """Whether an address is anything but a public one (loopback, link-local, private, ...)."""
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        address = address.ipv4_mapped
    return not address.is_global or address.is_multicast


def _literal(host: str) -> IpAddress | None:
    try:
        return ipaddress.ip_address(host)
    except ValueError:
        return None


def checked_url(url: str, allowed: AllowedHosts) -> Target:
    """The URL's target, or RefusedUrl naming what is wrong (no DNS is asked here)."""
    if len(url) > MAX_URL_CHARS:
        raise RefusedUrl(f"is longer than {MAX_URL_CHARS} characters")
    parts = urlsplit(url.strip())
    scheme, host = parts.scheme.lower(), (parts.hostname or "").lower()
    if scheme not in ("http", "https") or not host:
        raise RefusedUrl(f"must be an https:// URL with a host, got {url!r}")
    if parts.username is not None or parts.password is not None:
        raise RefusedUrl("must not carry credentials (sign with the secret instead)")
    try:
        port = parts.port or (443 if scheme == "https" else 80)
    except ValueError:
        raise RefusedUrl(f"has no valid port: {url!r}") from None
    literal = _literal(host)
    if scheme == "http" and not allowed.allows(host, literal):
        raise RefusedUrl(
            f"must be https: plain http only to a host in SIMILAR_SESSIONS_ALERT_ALLOW_HOSTS, "
            f"and {host} is not one"
        )
    if literal is not None:
        check_address(host, literal, allowed)
    target = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
    return Target(url.strip(), scheme, host, port, target)


def check_address(host: str, address: IpAddress, allowed: AllowedHosts) -> None:
    """RefusedUrl when the address is inward and neither the host nor the address is allowed."""
    if inward(address) and not allowed.allows(host, address):
        raise RefusedUrl(
            f"{host} is at {address}, a loopback, link-local or private address: refused "
            "unless SIMILAR_SESSIONS_ALERT_ALLOW_HOSTS allows it"
        )


async def resolved(target: Target, allowed: AllowedHosts) -> IpAddress:
    """The address the delivery connects to: the host's first address, every one of its
    addresses checked (a name that resolves inward is refused)."""
    literal = _literal(target.host)
    if literal is not None:
        check_address(target.host, literal, allowed)
        return literal
    loop = asyncio.get_running_loop()
    try:
        infos = await loop.getaddrinfo(target.host, target.port, type=socket.SOCK_STREAM)
    except OSError as exc:
        raise RefusedUrl(f"{target.host} does not resolve: {exc}") from None
    addresses = [ipaddress.ip_address(str(info[4][0]).split("%")[0]) for info in infos]
    if not addresses:
        raise RefusedUrl(f"{target.host} does not resolve")
    for address in addresses:
        check_address(target.host, address, allowed)
    return addresses[0]
