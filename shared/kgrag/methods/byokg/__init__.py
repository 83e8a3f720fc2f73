"""ByoKG-RAG: multi-strategy graph retrieval for KGQA (Mavromatis et al., 2025; arXiv 2507.04127).

An LLM "KG-Linker" writes graph artifacts (entities, relation paths, openCypher, draft answers);
graph tools ground them (entity linking, path following, shortest paths, read-only queries,
agentic and scoring-based triplet retrieval); the context is refined over ``T_R = 2`` iterations
before a final answer call. See :class:`ByoKGRAG` and ``docs/byokg.md``.
"""

from kgrag.methods.byokg.config import ByoKGConfig
from kgrag.methods.byokg.context import GraphContext
from kgrag.methods.byokg.parsing import LinkerOutput, parse_linker_output
from kgrag.methods.byokg.pipeline import ByoKGRAG, retrieved_entities
from kgrag.methods.byokg.query import check_read_only, execute_query
from kgrag.methods.byokg.tools import GraphTools
from kgrag.methods.byokg.triplets import GraphReranker, TripletScorer

__all__ = [
    "ByoKGConfig",
    "ByoKGRAG",
    "GraphContext",
    "GraphReranker",
    "GraphTools",
    "LinkerOutput",
    "TripletScorer",
    "check_read_only",
    "execute_query",
    "parse_linker_output",
    "retrieved_entities",
]
