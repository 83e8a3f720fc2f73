"""GraphRAFT: choose among executable template queries; fine-tuning data from QA pairs alone.

Paper: Clemedtson & Shi, "GraphRAFT: Retrieval Augmented Fine-Tuning for Knowledge Graphs on
Graph Databases" (arXiv 2504.05478). Modules: :mod:`~kgrag.methods.graphraft.patterns`
(candidate queries), :mod:`~kgrag.methods.graphraft.enumeration` (numpy enumeration, labels),
:mod:`~kgrag.methods.graphraft.backend` (in memory or inside a Cypher database),
:mod:`~kgrag.methods.graphraft.decoding` (trie-constrained beam search),
:mod:`~kgrag.methods.graphraft.selection`, :mod:`~kgrag.methods.graphraft.prompts`,
:mod:`~kgrag.methods.graphraft.pipeline`, :mod:`~kgrag.methods.graphraft.training`.
"""

from kgrag.methods.graphraft.backend import CypherBackend, MemoryBackend, as_backend
from kgrag.methods.graphraft.config import GraphRAFTConfig
from kgrag.methods.graphraft.decoding import (
    TokenScorer,
    TransformersTokenScorer,
    chat_prompt_template,
    constrained_beam_search,
)
from kgrag.methods.graphraft.enumeration import (
    Candidate,
    best_label,
    enumerate_candidates,
    rank_for_training,
)
from kgrag.methods.graphraft.patterns import PathPattern
from kgrag.methods.graphraft.pipeline import GraphRAFT, parse_entities
from kgrag.methods.graphraft.selection import (
    ChatChoiceSelector,
    ConstrainedDecodingSelector,
    EmbeddingSelector,
)
from kgrag.methods.graphraft.training import QAPair, export_training_data, read_qa_pairs

__all__ = [
    "Candidate",
    "ChatChoiceSelector",
    "ConstrainedDecodingSelector",
    "CypherBackend",
    "EmbeddingSelector",
    "GraphRAFT",
    "GraphRAFTConfig",
    "MemoryBackend",
    "PathPattern",
    "QAPair",
    "TokenScorer",
    "TransformersTokenScorer",
    "as_backend",
    "best_label",
    "chat_prompt_template",
    "constrained_beam_search",
    "enumerate_candidates",
    "export_training_data",
    "parse_entities",
    "rank_for_training",
    "read_qa_pairs",
]
