"""What every request of a process shares: the engines, the tuning, the catalog of models in
use, what exact checks cost per account, the embedders of search texts, and the failure
modes' groupings of the last minutes."""

from __future__ import annotations

from dataclasses import dataclass, field

from sqlalchemy.ext.asyncio import AsyncEngine

from data.model_catalog import ModelCatalog
from indexer.embedders import Registry
from resolvers.comparison.check_costs import CheckCosts
from resolvers.groupings import Groupings
from resolvers.tuning import Tuning


@dataclass(frozen=True)
class Services:
    """Built once per process (similar_sessions/app.py)."""

    engine: AsyncEngine
    tuning: Tuning
    comparisons: AsyncEngine | None = None  # the comparisons' own pool; else `engine`
    models: ModelCatalog = field(default_factory=ModelCatalog)
    embedders: Registry = field(default_factory=Registry)
    checks: CheckCosts = field(default_factory=CheckCosts)
    groupings: Groupings = field(default_factory=Groupings)

    @property
    def comparison_engine(self) -> AsyncEngine:
        return self.comparisons or self.engine
