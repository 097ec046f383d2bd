"""Embedding providers served over the network, chosen by the identity's provider name."""

from __future__ import annotations

from config.settings import Settings
from data.model_identity import ModelIdentity
from indexer.embedders import Embedder, ProviderFactory


class EmbeddingFailed(RuntimeError):
    """The provider did not embed a batch after its retries; the message names why without
    any text or key (it is stored with the batch's chunks)."""


def providers_for(settings: Settings) -> dict[str, ProviderFactory]:
    """The provider factories a Registry consults for identities it has no factory of."""
    from indexer.providers.openai_compatible import OpenAIEmbedder, OpenAIOptions

    options = OpenAIOptions.of(settings)

    def openai_compatible(identity: ModelIdentity) -> Embedder:
        return OpenAIEmbedder(identity, options)

    return {"openai": openai_compatible}
