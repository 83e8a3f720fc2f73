"""The LlamaIndex retriever and query engine every kgrag method is wrapped in."""

from __future__ import annotations

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
    """A LlamaIndex ``BaseRetriever`` over a kgrag method; items become ``NodeWithScore``."""

    def __init__(self, method: KGMethod, callback_manager: CallbackManager | None = None,
                 verbose: bool = False) -> None:
        self.method = method
        self.last_result: RetrievalResult | None = None
        super().__init__(callback_manager=callback_manager, verbose=verbose)

    def _retrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        self.last_result = self.method.retrieve(query_bundle.query_str)
        return result_to_nodes(self.last_result)

    async def _aretrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        self.last_result = await self.method.aretrieve(query_bundle.query_str)
        return result_to_nodes(self.last_result)


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
