"""The comparison's tunable knobs; each default is the setting's declared one."""

from __future__ import annotations

from dataclasses import dataclass

from config.settings import Settings, default_of
from values.lookups import ComparisonSettings


@dataclass(frozen=True, slots=True)
class Tuning:
    embeddings_enabled: bool = default_of("embeddings_enabled")
    exact_scan_max_chunks: int = default_of("exact_scan_max_chunks")
    ef_search: int = default_of("hnsw_ef_search")
    ef_search_fitted: bool = default_of("hnsw_ef_search_fitted")
    ef_search_retry: int = default_of("hnsw_ef_search_retry")
    overfetch: int = default_of("hnsw_overfetch")
    comparison_timeout_ms: int = default_of("comparison_timeout_ms")
    verify_timeout_ms: int = default_of("verify_timeout_ms")
    failure_modes_sessions: int = default_of("failure_modes_sessions")
    failure_modes_timeout_ms: int = default_of("failure_modes_timeout_ms")
    page_connections: int = default_of("page_connections")
    alert_allow_hosts: str = default_of("alert_allow_hosts")  # alerts/urls.py reads it

    @property
    def comparison_settings(self) -> ComparisonSettings:
        """What a comparison's connection runs under."""
        return ComparisonSettings(self.comparison_timeout_ms, self.ef_search)

    @property
    def verify_budget_ms(self) -> int:
        """The time an exact check of unsure approximate lookups may take: its own budget,
        never more than the comparison's."""
        return min(self.verify_timeout_ms, self.comparison_timeout_ms)

    @classmethod
    def of(cls, settings: Settings) -> Tuning:
        return cls(
            embeddings_enabled=settings.embeddings_enabled,
            exact_scan_max_chunks=settings.exact_scan_max_chunks,
            ef_search=settings.hnsw_ef_search,
            ef_search_fitted=settings.hnsw_ef_search_fitted,
            ef_search_retry=settings.hnsw_ef_search_retry,
            overfetch=settings.hnsw_overfetch,
            comparison_timeout_ms=settings.comparison_timeout_ms,
            verify_timeout_ms=settings.verify_timeout_ms,
            failure_modes_sessions=settings.failure_modes_sessions,
            failure_modes_timeout_ms=settings.failure_modes_timeout_ms,
            page_connections=min(settings.page_connections, settings.comparison_pool_size),
            alert_allow_hosts=settings.alert_allow_hosts,
        )
