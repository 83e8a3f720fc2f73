"""GraphRAFT as a LlamaIndex retriever and query engine."""

from __future__ import annotations

from llama_index_kgrag.base import KGQueryEngine, KGRetriever


class GraphRAFTRetriever(KGRetriever):
    """Nodes returned by the selected candidate queries, as ``NodeWithScore`` (GraphRAFT)."""

    method_name = "graphraft"


class GraphRAFTQueryEngine(KGQueryEngine):
    """Answers with GraphRAFT's L2 prompt over the retrieved nodes (needs an LLM)."""

    method_name = "graphraft"
