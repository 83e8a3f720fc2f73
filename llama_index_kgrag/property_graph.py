"""Every kgrag graph method as a ``PropertyGraphIndex`` sub-retriever.

LlamaIndex composes property-graph retrieval from sub-retrievers over the index's own store::

    index.as_retriever(sub_retrievers=[
        VectorContextRetriever(index.property_graph_store, embed_model=...),
        KGPGRetriever(index.property_graph_store, "simgrag", llm=llm),
    ])

:class:`KGPGRetriever` is a ``BasePGRetriever`` (LlamaIndex's base of ``LLMSynonymRetriever``
/ ``VectorContextRetriever``) that runs a registered kgrag method (``"byokg"``, ``"simgrag"``,
``"graphraft"``, ``"ultrag"``, or any method registered as built from a graph) over that store:
the store is read once into kgrag's in-memory graph (:func:`kgrag.graph.as_graph_store`, chunks
and descriptions included) when the sub-retriever is built; call :meth:`KGPGRetriever.refresh`
after the index changes. Its nodes are the method's items as in every kgrag LlamaIndex
retriever (:func:`~llama_index_kgrag.conversions.result_to_nodes`: stable ids, flat provenance,
scores that never rise along the list), so ``PGRetriever``'s de-duplication and any node
post-processor work on them. ``llm`` / ``embedder`` default to ``Settings`` like the other
factories (``False`` opts out, :mod:`llama_index_kgrag.settings`).
"""

from __future__ import annotations

from typing import Any

from llama_index.core.indices.property_graph.sub_retrievers.base import (
    DEFAULT_PREAMBLE,
    BasePGRetriever,
)
from llama_index.core.schema import NodeWithScore, QueryBundle

from kgrag.graph.sources.coerce import as_graph_store
from kgrag.methods.base import KGMethod, check_question
from kgrag.methods.registry import get_method
from llama_index_kgrag.conversions import result_to_nodes
from llama_index_kgrag.settings import with_settings


class KGPGRetriever(BasePGRetriever):
    """A kgrag method over a ``PropertyGraphStore``, usable in
    ``PropertyGraphIndex.as_retriever(sub_retrievers=[...])``.

    ``method``: a registered graph method's name (default ``"byokg"``, whose LLM-free mode
    needs no LLM) or a method already built. ``params`` go to the method's constructor
    (``linking="exact"`` for UltRAG, ``k`` for SimGRAG, ...). ``similarity_top_k`` caps the
    nodes (``None``: all the method retrieves). ``include_text`` (default ``False``: a kgrag
    node is already a fact, path or subgraph) is ``BasePGRetriever``'s.
    """

    def __init__(self, graph_store: Any, method: str | KGMethod = "byokg", *, llm: Any = None,
                 embedder: Any = None, similarity_top_k: int | None = None,
                 include_text: bool = False, include_text_preamble: str | None = DEFAULT_PREAMBLE,
                 callback_manager: Any = None, **params: Any) -> None:
        if similarity_top_k is not None and similarity_top_k < 0:
            raise ValueError("similarity_top_k must be >= 0 or None")
        super().__init__(graph_store=graph_store, include_text=include_text,
                         include_text_preamble=include_text_preamble,
                         callback_manager=callback_manager)
        self.similarity_top_k = similarity_top_k
        self._recipe = (method, with_settings(llm, embedder), params)
        self.method = self._build()

    @classmethod
    def from_index(cls, index: Any, method: str | KGMethod = "byokg", **kwargs: Any
                   ) -> KGPGRetriever:
        """The sub-retriever over ``index.property_graph_store``."""
        return cls(index.property_graph_store, method, **kwargs)

    def _build(self) -> KGMethod:
        method, models, params = self._recipe
        if isinstance(method, KGMethod):
            return method
        spec = get_method(method)
        if spec.builds_from != "graph":
            raise TypeError(f"{method!r} is built from documents, not from a graph: use "
                            f"llama_index_kgrag.retriever_for({method!r}).from_documents(...)")
        return spec.build(as_graph_store(self._graph_store), **models, **params)

    def refresh(self) -> None:
        """Read the store again (after nodes or relations were added to the index) and rebuild
        the method from it; a method passed already built is kept."""
        self.method = self._build()

    def retrieve_from_graph(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        result = self.method.retrieve(check_question(query_bundle.query_str))
        return result_to_nodes(result, k=self.similarity_top_k)

    async def aretrieve_from_graph(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        result = await self.method.aretrieve(check_question(query_bundle.query_str))
        return result_to_nodes(result, k=self.similarity_top_k)
