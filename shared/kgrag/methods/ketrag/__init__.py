"""KET-RAG (Huang, Zhang, Xiao, KDD '25): cost-efficient multi-granular indexing for Graph-RAG.

Indexing: token chunks -> chunk KNN graph (k lexical + k semantic neighbours) -> PageRank ->
LLM skeleton extraction on the top beta fraction only -> a keyword-sub-chunk bipartite graph over
all text (no LLM). Retrieval: an entity channel (local search on the skeleton, lambda * L tokens)
and a keyword channel (keywords -> their sub-chunks -> ranked, the rest of L).
"""

from kgrag.methods.ketrag.builder import build_index
from kgrag.methods.ketrag.config import KETRAGConfig
from kgrag.methods.ketrag.index import KETIndex
from kgrag.methods.ketrag.pipeline import KETRAG, parse_answer

__all__ = ["KETRAG", "KETIndex", "KETRAGConfig", "build_index", "parse_answer"]
