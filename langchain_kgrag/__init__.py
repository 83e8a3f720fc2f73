"""LangChain integration of kgrag: one ``BaseRetriever`` (and tool) per method."""

from langchain_kgrag.base import KGRetriever
from langchain_kgrag.byokg import ByoKGRetriever, KGToolkit
from langchain_kgrag.conversions import result_to_documents
from langchain_kgrag.graphraft import GraphRAFTRetriever
from langchain_kgrag.ketrag import KETRAGRetriever
from langchain_kgrag.simgrag import SimGRAGRetriever
from langchain_kgrag.ultrag import UltRAGRetriever

__all__ = [
    "ByoKGRetriever",
    "GraphRAFTRetriever",
    "KETRAGRetriever",
    "KGRetriever",
    "KGToolkit",
    "SimGRAGRetriever",
    "UltRAGRetriever",
    "result_to_documents",
]
