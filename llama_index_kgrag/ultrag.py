"""UltRAG as a LlamaIndex retriever and query engine (scored entities become ``NodeWithScore``).

A node's text is ``"<entity> (<membership>)"``, its score the fuzzy membership; metadata holds
``entity``, ``entity_id`` and the executed ``query``. The query engine runs the whole recipe:
query generation, execution and LLM arbitration (two LLM calls), and keeps the scored entities
as ``source_nodes``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, cast

from llama_index.core.schema import NodeWithScore

from llama_index_kgrag.base import KGQueryEngine, KGRetriever

if TYPE_CHECKING:  # pragma: no cover
    from kgrag.methods.ultrag import UltRAG

class UltRAGRetriever(KGRetriever):
    """LlamaIndex ``BaseRetriever`` over :class:`kgrag.methods.ultrag.UltRAG`."""

    method_name = "ultrag"

    def execute(self, query: str, question: str = "") -> list[NodeWithScore]:
        """Nodes for a DSL / tuple query written by code (no LLM call)."""
        return self._nodes(cast("UltRAG", self.method).retrieve_query(query, question))


class UltRAGQueryEngine(KGQueryEngine):
    """LlamaIndex query engine: UltRAG retrieval plus its LLM (or margin) arbitrator."""

    method_name = "ultrag"
