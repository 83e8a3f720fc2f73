"""Conversions from kgrag result types to LangChain ``Document`` objects."""

from __future__ import annotations

from langchain_core.documents import Document

from kgrag.context.metadata import ranked_records
from kgrag.context.types import RetrievalResult


def result_to_documents(result: RetrievalResult, k: int | None = None) -> list[Document]:
    """One ``Document`` per retrieved item (the first ``k``), in rank order.

    ``id`` is stable (hash of method and text); metadata is flat and primitive (see
    :func:`kgrag.context.metadata.ranked_records`).
    """
    return [Document(id=r.id, page_content=r.text, metadata=r.metadata)
            for r in ranked_records(result, k)]
