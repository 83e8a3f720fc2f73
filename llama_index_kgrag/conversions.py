"""Conversions from kgrag result types to LlamaIndex ``NodeWithScore`` / ``TextNode``."""

from __future__ import annotations

import hashlib

from llama_index.core.schema import NodeWithScore, TextNode

from kgrag.context.metadata import ranked_items
from kgrag.context.types import RetrievalResult


def result_to_nodes(result: RetrievalResult) -> list[NodeWithScore]:
    """One ``NodeWithScore`` per retrieved item, in rank order, with provenance in metadata.

    Node ids are a stable hash of the method and the item text, so the same fact retrieved twice
    has the same id (LlamaIndex post-processors de-duplicate on it).
    """
    nodes = []
    for text, meta, score in ranked_items(result):
        node_id = hashlib.sha1(f"{result.method}\x00{text}".encode()).hexdigest()
        node = TextNode(
            id_=node_id,
            text=text,
            metadata=meta,
            # metadata is provenance, not content: keep it out of embeddings and LLM prompts
            excluded_embed_metadata_keys=list(meta),
            excluded_llm_metadata_keys=list(meta),
        )
        nodes.append(NodeWithScore(node=node, score=score))
    return nodes
