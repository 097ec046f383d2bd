"""The observability settings: Prometheus metrics and OpenTelemetry traces."""

from __future__ import annotations

from pydantic import Field, field_validator
from pydantic_settings import BaseSettings

from config.fields import setting

TRACES_EXPORTERS = ("otlp", "console", "none")


class ObservabilitySettings(BaseSettings):
    metrics: bool = setting(
        True,
        "serve Prometheus metrics at `GET /metrics` (no key: no account, session or content in "
        "any label)",
        "observability",
    )
    otel_exporter_otlp_endpoint: str | None = Field(
        None,
        validation_alias="OTEL_EXPORTER_OTLP_ENDPOINT",
        description="set: traces are exported there by OTLP over HTTP/protobuf (e.g. "
        "`http://collector:4318`); the exporter's other `OTEL_*` variables apply",
        json_schema_extra={"group": "observability", "shown_default": "unset"},
    )
    otel_traces_exporter: str | None = Field(
        None,
        validation_alias="OTEL_TRACES_EXPORTER",
        description="`otlp`, `console` (JSON spans on stdout) or `none`; unset: `otlp` when an "
        "endpoint is set, else no tracing at all",
        json_schema_extra={"group": "observability", "shown_default": "unset"},
    )
    otel_service_name: str = Field(
        "similar-sessions",
        validation_alias="OTEL_SERVICE_NAME",
        description="the traces' `service.name`",
        json_schema_extra={"group": "observability"},
    )

    @field_validator("otel_traces_exporter")
    @classmethod
    def _known_exporter(cls, value: str | None) -> str | None:
        if value is None:
            return None
        value = value.strip().lower()
        if value not in TRACES_EXPORTERS:
            raise ValueError(f"must be one of {', '.join(TRACES_EXPORTERS)}")
        return value

    @property
    def traces_exporter(self) -> str | None:
        """Where traces go (`otlp` or `console`), or None: tracing is off."""
        exporter = self.otel_traces_exporter
        if exporter is None and self.otel_exporter_otlp_endpoint:
            exporter = "otlp"
        return None if exporter in (None, "none") else exporter
