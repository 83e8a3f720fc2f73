"""Normalise KET-RAG's input: plain strings, LangChain ``Document`` s or LlamaIndex documents/nodes.

Duck-typed (the core imports neither framework): ``page_content`` (LangChain), ``get_content()`` /
``text`` (LlamaIndex), or a ``{"text": ..., "metadata": ...}`` mapping. Metadata is kept only as
JSON values so the index can be saved without pickle.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class SourceDocument:
    """One input document: an id, its text and JSON-safe metadata."""

    doc_id: str
    text: str
    metadata: dict[str, Any] = field(default_factory=dict)


def _json_safe(metadata: Mapping[str, Any] | None) -> dict[str, Any]:
    safe: dict[str, Any] = {}
    for key, value in (metadata or {}).items():
        try:
            json.dumps(value)
            safe[str(key)] = value
        except (TypeError, ValueError):
            safe[str(key)] = str(value)
    return safe


def to_source_document(doc: Any, position: int) -> SourceDocument:
    """Convert one input; raises ``TypeError`` naming the position for unsupported objects."""
    default_id = f"doc{position}"
    if isinstance(doc, SourceDocument):
        return doc
    if isinstance(doc, str):
        return SourceDocument(default_id, doc)
    if isinstance(doc, Mapping) and isinstance(doc.get("text"), str):
        return SourceDocument(str(doc.get("id") or default_id), doc["text"],
                              _json_safe(doc.get("metadata")))
    if isinstance(getattr(doc, "page_content", None), str):  # LangChain Document
        return SourceDocument(str(getattr(doc, "id", None) or default_id), doc.page_content,
                              _json_safe(getattr(doc, "metadata", None)))
    get_content = getattr(doc, "get_content", None)
    if callable(get_content):  # LlamaIndex Document / TextNode
        doc_id = getattr(doc, "doc_id", None) or getattr(doc, "id_", None) or default_id
        return SourceDocument(str(doc_id), str(get_content()),
                              _json_safe(getattr(doc, "metadata", None)))
    raise TypeError(f"document {position} is a {type(doc).__name__}; pass strings, LangChain "
                    "Documents, LlamaIndex Documents/nodes or {'text': ...} mappings")


def to_source_documents(docs: Iterable[Any]) -> list[SourceDocument]:
    """Convert every input; duplicate ids get a ``#n`` suffix so ids stay unique."""
    if isinstance(docs, (str, bytes)):
        docs = [docs]
    out: list[SourceDocument] = []
    seen: dict[str, int] = {}
    for i, doc in enumerate(docs):
        src = to_source_document(doc, i)
        if src.doc_id in seen:
            seen[src.doc_id] += 1
            src = SourceDocument(f"{src.doc_id}#{seen[src.doc_id]}", src.text, src.metadata)
        else:
            seen[src.doc_id] = 0
        out.append(src)
    return out
