"""SimGRAG (Cai et al.): retrieve the top-k knowledge-graph subgraphs most similar to a pattern.

An LLM rewrites the question into a small pattern graph of triples (``UNKNOWN`` placeholders for
what is asked); candidates for each pattern node and relation come from vector search over the
graph's names; an exact branch-and-bound search returns the ``k`` subgraphs with the smallest
Graph Semantic Distance; the subgraphs, written out as triples, ground the answer prompt.
"""

from kgrag.methods.simgrag.candidates import CandidateGenerator, NameIndex, humanize_relation
from kgrag.methods.simgrag.pattern import (
    Pattern,
    PatternBudgetError,
    PatternError,
    is_unknown,
    parse_pattern_reply,
)
from kgrag.methods.simgrag.pipeline import SimGRAG, gsd_of
from kgrag.methods.simgrag.prompts import (
    answer_prompt,
    parse_answers,
    pattern_prompt,
    verbalize_graphs,
)
from kgrag.methods.simgrag.search import (
    CandidateSet,
    Match,
    SearchResult,
    SubgraphSearch,
    enumerate_matches,
)
from kgrag.methods.simgrag.topk import top_k_reusing, top_k_subgraphs

__all__ = [
    "CandidateGenerator",
    "CandidateSet",
    "Match",
    "NameIndex",
    "Pattern",
    "PatternBudgetError",
    "PatternError",
    "SearchResult",
    "SimGRAG",
    "SubgraphSearch",
    "answer_prompt",
    "enumerate_matches",
    "gsd_of",
    "humanize_relation",
    "is_unknown",
    "parse_answers",
    "parse_pattern_reply",
    "pattern_prompt",
    "top_k_reusing",
    "top_k_subgraphs",
    "verbalize_graphs",
]
