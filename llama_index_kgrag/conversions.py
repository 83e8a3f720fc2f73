"""Conversions from kgrag result types to LlamaIndex ``NodeWithScore`` / ``TextNode``."""

from __future__ import annotations

from llama_index.core.schema import NodeWithScore, TextNode

from kgrag.context.metadata import ranked_records
from kgrag.context.types import RetrievalResult


def result_to_nodes(result: RetrievalResult, k: int | None = None) -> list[NodeWithScore]:
    """One ``NodeWithScore`` per retrieved item (the first ``k``), in rank order.

    Node ids are a stable hash of the method and the item text, so the same fact retrieved twice
    has the same id (LlamaIndex post-processors de-duplicate on it). Metadata is flat and
    primitive (see :func:`kgrag.context.metadata.ranked_records`), as vector stores require.
    """
    nodes = []
    for record in ranked_records(result, k):
        node = TextNode(
            id_=record.id,
            text=record.text,
            metadata=record.metadata,
            # metadata is provenance, not content: keep it out of embeddings and LLM prompts
            excluded_embed_metadata_keys=list(record.metadata),
            excluded_llm_metadata_keys=list(record.metadata),
        )
        nodes.append(NodeWithScore(node=node, score=record.score))
    return nodes
