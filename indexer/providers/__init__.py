"""Embedding providers served over the network, chosen by the identity's provider name."""

from __future__ import annotations

from config.settings import Settings
from data.model_identity import ModelIdentity
from indexer.embedders import Embedder, ProviderFactory
from indexer.providers.failures import EmbeddingFailed

__all__ = ["EmbeddingFailed", "providers_for"]


def providers_for(settings: Settings) -> dict[str, ProviderFactory]:
    """The provider factories a Registry consults for identities it has no factory of."""
    from indexer.providers.openai_compatible import OpenAIEmbedder, OpenAIOptions

    options = OpenAIOptions.of(settings)

    def openai_compatible(identity: ModelIdentity) -> Embedder:
        return OpenAIEmbedder(identity, options)

    return {"openai": openai_compatible}
