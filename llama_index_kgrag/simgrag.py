"""SimGRAG as a LlamaIndex retriever and query engine (subgraphs become ``NodeWithScore``).

A node's text is the subgraph's triples; its score is ``1 / (1 + GSD)``; metadata holds the
``gsd`` itself, the pattern-to-graph ``mapping`` and the ``pattern``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, cast

from llama_index_kgrag.base import KGQueryEngine, KGRetriever

if TYPE_CHECKING:  # pragma: no cover
    from kgrag.methods.simgrag import SimGRAG

class SimGRAGRetriever(KGRetriever):
    """LlamaIndex ``BaseRetriever`` over :class:`kgrag.methods.simgrag.SimGRAG`."""

    method_name = "simgrag"

    def retrieve_pattern(self, triples: Any, question: str = "") -> list:
        """Nodes for a pattern written by code (no LLM call)."""
        return self._nodes(cast("SimGRAG", self.method).retrieve_pattern(triples, question))


class SimGRAGQueryEngine(KGQueryEngine):
    """LlamaIndex query engine: SimGRAG retrieval plus its evidence-graph answer prompt."""

    method_name = "simgrag"
