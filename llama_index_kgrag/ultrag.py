"""UltRAG as a LlamaIndex retriever and query engine (scored entities become ``NodeWithScore``).

A node's text is ``"<entity> (<membership>)"``, its score the fuzzy membership; metadata holds
``entity``, ``entity_id`` and the executed ``query``. The query engine runs the whole recipe:
query generation, execution and LLM arbitration (two LLM calls), and keeps the scored entities
as ``source_nodes``.

Two agent tools, told apart by their input: ``UltRAGRetriever.as_tool()`` (the question tool,
``knowledge_graph_answer_question``: a plain question) and ``UltRAGRetriever.as_query_tool()``
(the query tool, ``knowledge_graph_execute_logical_query``: a query in UltRAG's DSL).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, cast

from llama_index.core.schema import NodeWithScore
from llama_index.core.tools import FunctionTool
from pydantic import BaseModel, Field

from kgrag.methods.ultrag.tools import (
    QUERY_DESCRIPTION,
    QUERY_TOOL_DESCRIPTION,
    QUERY_TOOL_NAME,
    run_query_tool,
)
from llama_index_kgrag.base import KGQueryEngine, KGRetriever

if TYPE_CHECKING:  # pragma: no cover
    from kgrag.methods.ultrag import UltRAG

class UltRAGRetriever(KGRetriever):
    """LlamaIndex ``BaseRetriever`` over :class:`kgrag.methods.ultrag.UltRAG`."""

    method_name = "ultrag"

    def execute(self, query: str, question: str = "") -> list[NodeWithScore]:
        """Nodes for a DSL / tuple query written by code (no LLM call)."""
        return self._nodes(cast("UltRAG", self.method).retrieve_query(query, question))

    def as_query_tool(self, name: str = QUERY_TOOL_NAME,
                      description: str | None = None) -> FunctionTool:
        """The **query tool**: its input is a logical query the agent wrote in UltRAG's DSL
        (no LLM call), unlike ``as_tool()`` (the question tool,
        ``knowledge_graph_answer_question``), whose input is a plain question. Each line of
        its answer says whether the graph proves the entity or the neural executor guessed
        it (:func:`kgrag.methods.ultrag.tools.run_query_tool`)."""

        def run(query: str, question: str = "") -> str:
            return run_query_tool(cast("UltRAG", self.method), query, question,
                                  self.similarity_top_k)

        return FunctionTool.from_defaults(
            fn=run, name=name, description=description or QUERY_TOOL_DESCRIPTION,
            fn_schema=LogicalQueryToolInput)


class LogicalQueryToolInput(BaseModel):
    """Arguments of UltRAG's query tool (LlamaIndex)."""

    query: str = Field(description=QUERY_DESCRIPTION)
    question: str = Field("", description="The question the query answers (optional; kept "
                                          "in the results' provenance).")


class UltRAGQueryEngine(KGQueryEngine):
    """LlamaIndex query engine: UltRAG retrieval plus its LLM (or margin) arbitrator."""

    method_name = "ultrag"
