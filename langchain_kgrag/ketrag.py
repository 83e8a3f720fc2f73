"""KET-RAG as a LangChain retriever: every context unit of both channels is one ``Document``.

``page_content`` is a text sub-chunk, an entity row or a relationship row; ``metadata`` holds
``channel`` ("entity" or "keyword"), ``kind`` ("text", "entity", "relationship"), ``score``,
``tokens`` (its share of the context budget), ``source_ids`` (sub-chunk ids), ``doc_id`` and the
document's own metadata. Retrieval makes no LLM call; the LLM is used once per question by
``answer`` and, at indexing time, on the key chunks only (``budget`` beta > 0).
"""

from __future__ import annotations

from kgrag.methods.registry import get_method
from langchain_kgrag.base import KGRetriever


class KETRAGRetriever(KGRetriever):
    """LangChain ``BaseRetriever`` over :class:`kgrag.methods.ketrag.KETRAG`."""

    method_name = "ketrag"
    tool_name: str = get_method("ketrag").tool_name
    tool_description: str = get_method("ketrag").tool_description

