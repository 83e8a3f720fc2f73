"""Conversions from kgrag result types to LangChain ``Document`` objects."""

from __future__ import annotations

from langchain_core.documents import Document

from kgrag.context.metadata import ranked_items
from kgrag.context.types import RetrievalResult


def result_to_documents(result: RetrievalResult) -> list[Document]:
    """One ``Document`` per retrieved item, in rank order, with provenance in metadata."""
    return [Document(page_content=text, metadata=meta) for text, meta, _ in ranked_items(result)]
