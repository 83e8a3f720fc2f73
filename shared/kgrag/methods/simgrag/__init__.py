"""SimGRAG (Cai et al.): retrieve the top-k knowledge-graph subgraphs most similar to a pattern.

An LLM rewrites the question into a small pattern graph of triples (``UNKNOWN`` placeholders for
what is asked); candidates for each pattern node and relation come from vector search over the
graph's names; an exact branch-and-bound search returns the ``k`` subgraphs with the smallest
Graph Semantic Distance; the subgraphs, written out as triples, ground the answer prompt.
"""

from kgrag.methods.simgrag.pattern import Pattern, PatternError, is_unknown, parse_pattern_reply
from kgrag.methods.simgrag.search import (
    CandidateSet,
    Match,
    SearchResult,
    SubgraphSearch,
    enumerate_matches,
    top_k_subgraphs,
)

__all__ = [
    "CandidateSet",
    "Match",
    "Pattern",
    "PatternError",
    "SearchResult",
    "SubgraphSearch",
    "enumerate_matches",
    "is_unknown",
    "parse_pattern_reply",
    "top_k_subgraphs",
]
