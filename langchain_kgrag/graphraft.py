"""GraphRAFT as a LangChain retriever (and tool)."""

from __future__ import annotations

from kgrag.methods.registry import get_method
from langchain_kgrag.base import KGRetriever


class GraphRAFTRetriever(KGRetriever):
    """Retrieves the nodes returned by the selected candidate Cypher queries (GraphRAFT).

    Each ``Document`` is one node; metadata holds the patterns (canonical queries) that returned
    it, or ``"No pattern"`` for the vector top-up.
    """

    method_name = "graphraft"
    tool_name: str = get_method("graphraft").tool_name
    tool_description: str = get_method("graphraft").tool_description

