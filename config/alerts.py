"""The alerts' settings (docs/alerts.md): how often an account's rules are evaluated, which
hosts a webhook may point inward to, and how deliveries are timed, retried and given up."""

from __future__ import annotations

import ipaddress

from pydantic import field_validator
from pydantic_settings import BaseSettings

from config.fields import setting


class AlertSettings(BaseSettings):
    alert_interval_s: float = setting(
        30.0,
        "an account's alert rules are evaluated at most once per this many seconds, after an "
        "indexing pass embedded its sessions (target: delivered within 2 x this + 5 s)",
        "alerts",
        ge=0.1,
        le=86_400,
    )
    alert_allow_hosts: str = setting(
        "",
        "hosts (names, addresses or CIDR ranges, comma-separated) a webhook may reach over "
        "plain `http` or at a loopback, link-local or private address; empty: none",
        "alerts",
    )
    alert_max_failures: int = setting(
        5,
        "consecutive failed deliveries after which a rule is disabled, the reason kept",
        "alerts",
        ge=1,
        le=1000,
    )
    alert_timeout_s: float = setting(
        10.0,
        "a delivery's bound to connect, send and read its answer (no redirect is followed)",
        "alerts",
        ge=0.1,
        le=120,
    )
    alert_retry_base_s: float = setting(
        10.0,
        "the first retry's delay; each next one doubles, until the alert is 24 h old",
        "alerts",
        ge=0.01,
        le=3600,
    )
    alert_console_url: str = setting(
        "http://localhost:8000",
        "where the console is reached from the receivers: the base of an alert's links",
        "alerts",
    )

    @field_validator("alert_allow_hosts")
    @classmethod
    def _allow_hosts(cls, value: str) -> str:
        """Every item a host name or an address; one with a `/` an address range."""
        for item in (part.strip() for part in value.split(",")):
            if "/" in item:
                try:
                    ipaddress.ip_network(item, strict=False)
                except ValueError:
                    raise ValueError(f"{item!r} is not an address range") from None
        return value
