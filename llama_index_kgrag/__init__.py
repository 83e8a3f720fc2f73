"""LlamaIndex integration of kgrag: a retriever and a query engine per method."""

from llama_index_kgrag.base import KGQueryEngine, KGRetriever
from llama_index_kgrag.conversions import result_to_nodes

__all__ = ["KGQueryEngine", "KGRetriever", "result_to_nodes"]
