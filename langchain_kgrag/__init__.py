"""LangChain integration of kgrag: one ``BaseRetriever`` (and tool) per method."""

from langchain_kgrag.base import KGRetriever
from langchain_kgrag.conversions import result_to_documents

__all__ = ["KGRetriever", "result_to_documents"]
