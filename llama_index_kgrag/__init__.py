"""LlamaIndex integration of kgrag: a retriever and a query engine per method."""

from llama_index_kgrag.base import KGQueryEngine, KGRetriever
from llama_index_kgrag.byokg import ByoKGQueryEngine, ByoKGRetriever, graph_tools
from llama_index_kgrag.conversions import result_to_nodes
from llama_index_kgrag.graphraft import GraphRAFTQueryEngine, GraphRAFTRetriever
from llama_index_kgrag.ketrag import KETRAGQueryEngine, KETRAGRetriever
from llama_index_kgrag.simgrag import SimGRAGQueryEngine, SimGRAGRetriever
from llama_index_kgrag.ultrag import UltRAGQueryEngine, UltRAGRetriever

__all__ = [
    "ByoKGQueryEngine",
    "ByoKGRetriever",
    "GraphRAFTQueryEngine",
    "GraphRAFTRetriever",
    "KETRAGQueryEngine",
    "KETRAGRetriever",
    "KGQueryEngine",
    "KGRetriever",
    "SimGRAGQueryEngine",
    "SimGRAGRetriever",
    "UltRAGQueryEngine",
    "UltRAGRetriever",
    "graph_tools",
    "result_to_nodes",
]
