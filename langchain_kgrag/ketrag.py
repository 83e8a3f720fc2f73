"""KET-RAG as a LangChain retriever: every context unit of both channels is one ``Document``.

``page_content`` is a text sub-chunk, an entity row or a relationship row; ``metadata`` holds
``channel`` ("entity" or "keyword"), ``kind`` ("text", "entity", "relationship"), ``score``,
``tokens`` (its share of the context budget), ``source_ids`` (sub-chunk ids), ``doc_id`` and the
document's own metadata. Retrieval makes no LLM call; the LLM is used once per question by
``answer`` and, at indexing time, on the key chunks only (``budget`` beta > 0).
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any

from kgrag.methods.ketrag import KETRAG

from langchain_kgrag.base import KGRetriever


class KETRAGRetriever(KGRetriever):
    """LangChain ``BaseRetriever`` over :class:`kgrag.methods.ketrag.KETRAG`."""

    tool_name: str = "document_graph_search"
    tool_description: str = (
        "Search the indexed documents for context relevant to a question (KET-RAG): facts from "
        "a knowledge-graph skeleton of the key passages plus keyword-matched text passages. "
        "Input: the question. Output: entities, relationships and passages."
    )

    @classmethod
    def from_documents(cls, documents: Iterable[Any], llm: Any = None, embedder: Any = None,
                       **params: Any) -> KETRAGRetriever:
        """Index LangChain ``Document`` s (or strings); ``budget=0`` needs no LLM.

        ``params``: any :class:`~kgrag.methods.ketrag.KETRAGConfig` field, ``cache_dir``,
        ``progress``, ``tokenizer``.
        """
        own = cls.adapter_fields(params)
        return cls(method=KETRAG.from_documents(documents, llm=llm, embedder=embedder,
                                                **params), **own)

    @classmethod
    def load(cls, directory: str | Path, llm: Any = None, embedder: Any = None,
             **retrieval_params: Any) -> KETRAGRetriever:
        """Open an index directory written by ``retriever.method.save(directory)``."""
        own = cls.adapter_fields(retrieval_params)
        return cls(method=KETRAG.load(directory, llm=llm, embedder=embedder, **retrieval_params),
                   **own)
