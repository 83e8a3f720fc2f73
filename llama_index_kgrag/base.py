"""The LlamaIndex retriever and query engine every kgrag method is wrapped in."""

from __future__ import annotations

import warnings
from typing import Any

from llama_index.core.base.base_retriever import BaseRetriever
from llama_index.core.base.response.schema import Response
from llama_index.core.callbacks import CallbackManager
from llama_index.core.query_engine import CustomQueryEngine
from llama_index.core.schema import NodeWithScore, QueryBundle

from kgrag.context.types import RetrievalResult
from kgrag.methods.base import KGMethod
from llama_index_kgrag.conversions import result_to_nodes


class KGRetriever(BaseRetriever):
    """A LlamaIndex ``BaseRetriever`` over a kgrag method; items become ``NodeWithScore``.

    Stateless: every node carries the question's usage (``usage_*``) and the method-level
    provenance (``retrieval``, JSON) in its flat metadata. ``similarity_top_k`` caps the node
    count (``None``: as many as the method retrieves).
    """

    def __init__(self, method: KGMethod, callback_manager: CallbackManager | None = None,
                 verbose: bool = False, similarity_top_k: int | None = None) -> None:
        if similarity_top_k is not None and similarity_top_k < 0:
            raise ValueError("similarity_top_k must be >= 0 or None")
        self.method = method
        self.similarity_top_k = similarity_top_k
        self._last_result: RetrievalResult | None = None
        super().__init__(callback_manager=callback_manager, verbose=verbose)

    def _nodes(self, result: RetrievalResult) -> list[NodeWithScore]:
        self._last_result = result
        return result_to_nodes(result, k=self.similarity_top_k)

    def _retrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        return self._nodes(self.method.retrieve(query_bundle.query_str))

    async def _aretrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        return self._nodes(await self.method.aretrieve(query_bundle.query_str))

    @property
    def last_result(self) -> RetrievalResult | None:
        """Deprecated: the most recent call's result (overwritten by concurrent calls). Read
        the nodes' ``usage_*`` / ``retrieval`` metadata or ``method.retrieve(q)`` instead."""
        warnings.warn("KGRetriever.last_result is deprecated and not safe under concurrency; "
                      "read the nodes' usage_* / retrieval metadata", DeprecationWarning,
                      stacklevel=2)
        return self._last_result


class KGQueryEngine(CustomQueryEngine):
    """A LlamaIndex query engine that answers with the method's own answer prompt.

    The response's ``source_nodes`` are the retrieved items; ``metadata`` holds the parsed
    answer list and the LLM usage (calls and tokens) of the question.
    """

    method: Any

    def _response(self, answer: Any) -> Response:
        return Response(
            response=answer.text,
            source_nodes=result_to_nodes(answer.retrieval),
            metadata={"answers": list(answer.answers), "usage": answer.usage.as_dict(),
                      "method": answer.retrieval.method},
        )

    def custom_query(self, query_str: str) -> Response:
        return self._response(self.method.answer(query_str))

    async def acustom_query(self, query_str: str) -> Response:
        return self._response(await self.method.aanswer(query_str))
