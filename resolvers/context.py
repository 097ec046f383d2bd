"""The per-request context: the process's services, the caller, the cursor codec, the
request's budgets (comparisons, replay content) and its DataLoaders (resolvers/loaders.py)."""

from __future__ import annotations

from dataclasses import dataclass, field

from data.accounts import Principal
from resolvers.budgets import ContentBudget, RequestBudget
from resolvers.cursors import Cursors
from resolvers.loaders import Loaders
from resolvers.services import Services


@dataclass(frozen=True)
class Context:
    """Built once per request; its DataLoaders never outlive it."""

    services: Services
    principal: Principal
    cursors: Cursors
    loaders: Loaders
    budget: RequestBudget = field(default_factory=RequestBudget)
    content: ContentBudget = field(default_factory=ContentBudget)

    @classmethod
    def of(
        cls,
        services: Services,
        principal: Principal,
        cursors: Cursors,
        content: ContentBudget | None = None,
        budget: RequestBudget | None = None,
    ) -> Context:
        """A request's context with fresh DataLoaders for its caller's account."""
        content = content or ContentBudget()
        loaders = Loaders.of(services, principal.account_id, content)
        return cls(services, principal, cursors, loaders, budget or RequestBudget(), content)
