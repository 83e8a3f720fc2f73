"""Embeddings: the Embedder protocol, the offline MiniLM default, framework adapters, caching.

>>> from kgrag.embed import LookupEmbedder
>>> LookupEmbedder({"a": [3, 4]}).embed_query("a").tolist()
[0.6000000238418579, 0.800000011920929]
"""

from kgrag.embed.adapters import LangChainEmbedder, LlamaIndexEmbedder, as_embedder
from kgrag.embed.base import Embedder, embedder_name, l2_normalize
from kgrag.embed.graph_vectors import graph_name_vectors
from kgrag.embed.lookup import LookupEmbedder, UnknownTextError
from kgrag.embed.sentence_transformer import (
    DEFAULT_MODEL_NAME,
    SentenceTransformerEmbedder,
    default_embedder,
    default_model_path,
)
from kgrag.embed.similarity import matvec, matvecs
from kgrag.embed.store import (
    CachedEmbedder,
    cache_root,
    configure_cache,
    embed_cached,
    texts_fingerprint,
)
from kgrag.embed.vector_index import VectorIndex

__all__ = [
    "DEFAULT_MODEL_NAME",
    "CachedEmbedder",
    "Embedder",
    "LangChainEmbedder",
    "LlamaIndexEmbedder",
    "LookupEmbedder",
    "SentenceTransformerEmbedder",
    "UnknownTextError",
    "VectorIndex",
    "as_embedder",
    "cache_root",
    "configure_cache",
    "default_embedder",
    "default_model_path",
    "embed_cached",
    "embedder_name",
    "graph_name_vectors",
    "l2_normalize",
    "matvec",
    "matvecs",
    "texts_fingerprint",
]
