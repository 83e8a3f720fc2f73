"""KET-RAG as a LlamaIndex retriever and query engine (context units become ``NodeWithScore``).

Build from LlamaIndex ``Document`` s, or from the nodes an existing ``VectorStoreIndex`` keeps in
its docstore (:meth:`KETRAGRetriever.from_vector_store_index`): each node becomes one KET-RAG
document (re-chunked to ``chunk_size`` tokens when longer), with its ``ref_doc_id`` and metadata.
The query engine answers with KET-RAG's answer prompt (one LLM call per question).
"""

from __future__ import annotations

from typing import Any

from llama_index_kgrag.base import KGQueryEngine, KGRetriever


def vector_store_index_documents(index: Any) -> list[dict[str, Any]]:
    """The text nodes of a ``VectorStoreIndex`` docstore as KET-RAG input documents."""
    docstore = getattr(index, "docstore", None)
    nodes = list(getattr(docstore, "docs", {}).values()) if docstore is not None else []
    if not nodes:
        raise ValueError("the VectorStoreIndex keeps no nodes in its docstore (e.g. its vector "
                         "store holds the text); pass the documents to from_documents instead")
    out = []
    for node in nodes:
        meta = dict(getattr(node, "metadata", {}) or {})
        ref = getattr(node, "ref_doc_id", None)
        if ref:
            meta.setdefault("ref_doc_id", ref)
        out.append({"id": node.node_id, "text": node.get_content(), "metadata": meta})
    return out


class _FromVectorStoreIndex:
    """``from_vector_store_index``, written once for the retriever and the query engine."""

    @classmethod
    def from_vector_store_index(cls, index: Any, *, llm: Any = None,
                                embedder: Any = None, **params: Any) -> Any:
        """KET-RAG over the nodes of a ``VectorStoreIndex`` docstore
        (:func:`vector_store_index_documents`), wrapped like ``from_documents``; ``llm`` and
        ``embedder`` are keyword-only."""
        given = {k: v for k, v in (("llm", llm), ("embedder", embedder)) if v is not None}
        build: Any = cls
        return build.from_documents(vector_store_index_documents(index), **given, **params)


class KETRAGRetriever(_FromVectorStoreIndex, KGRetriever):
    """LlamaIndex ``BaseRetriever`` over :class:`kgrag.methods.ketrag.KETRAG`."""

    method_name = "ketrag"


class KETRAGQueryEngine(_FromVectorStoreIndex, KGQueryEngine):
    """LlamaIndex query engine: KET-RAG two-channel retrieval plus its answer prompt."""

    method_name = "ketrag"
