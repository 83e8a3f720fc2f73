"""KET-RAG parameters with the paper's defaults (Table 1 and Section 6 of Huang et al., KDD '25).

Symbols in the paper: chunk size ``l``, KNN integer ``k``, budget rate ``beta``, number of
splits ``m``, context limit ``L`` and channel ratio ``lambda``.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any, ClassVar

from kgrag.methods.config import MethodConfig

#: the manifest names of indexes saved before the one-name-per-concept rename -> the fields
SAVED_NAMES = {"knn_k": "neighbor_top_k", "top_k_entities": "entity_top_k",
               "top_k_relationships": "relationship_top_k"}

#: GraphRAG's default entity types, which KET-RAG inherits.
DEFAULT_ENTITY_TYPES = ("organization", "person", "geo", "event")


@dataclass(frozen=True)
class KETRAGConfig(MethodConfig):
    """Every knob of indexing and retrieval.

    Indexing:
      ``chunk_size`` (l = 1200 tokens, the paper's low-cost setting; 150 is its high-accuracy
      setting with ``splits=0``), ``chunk_overlap`` (0: the paper assumes disjoint chunks),
      ``splits`` (m = 3: sub-chunks of l / 2**m = 150 tokens), ``neighbor_top_k`` (the paper's
      KNN integer k = 2: each chunk's 2 lexical plus 2
      semantic neighbours; the paper's Table 5 row that matches its defaults),
      ``budget`` (beta = 0.8: the share of chunks sent to the LLM), ``selection`` ("pagerank" =
      KET-RAG-P, "uniform" = KET-RAG-U with ``seed``), ``pagerank_alpha`` (damping 0.85, i.e.
      teleport 0.15, as networkx and the reference code), ``max_gleanings`` (1 follow-up
      extraction call per chunk, GraphRAG's default), ``entity_types``,
      ``summarize_descriptions`` (merge an entity's descriptions from several chunks with one LLM
      call, as GraphRAG does; off = join them), ``max_workers`` (concurrent LLM calls).

    Retrieval:
      ``context_tokens`` (L = 12,000), ``graph_share`` (lambda = 0.5, the share of L for the
      entity channel; illegible in the paper, 0.5 is its Hybrid-RAG setting and the reference
      README's value), ``entity_top_k`` (10 seed entities), ``relationship_top_k`` (10 per
      seed, cap on out-of-network relationships), ``entity_table_share`` (0.5 of the entity
      channel for entity and relationship rows, the rest for text units: GraphRAG's
      ``text_unit_prop``), ``top_keywords`` (1,000 seed keywords at most) and
      ``candidate_factor`` (the keyword channel pools sub-chunks up to 2 x its budget before
      ranking them).
    """

    label: ClassVar[str] = "KET-RAG"

    chunk_size: int = 1200
    chunk_overlap: int = 0
    splits: int = 3
    neighbor_top_k: int = 2
    budget: float = 0.8
    selection: str = "pagerank"
    pagerank_alpha: float = 0.85
    seed: int = 42
    max_gleanings: int = 1
    entity_types: tuple[str, ...] = field(default=DEFAULT_ENTITY_TYPES)
    summarize_descriptions: bool = True
    max_workers: int = 4
    context_tokens: int = 12_000
    graph_share: float = 0.5
    entity_top_k: int = 10
    relationship_top_k: int = 10
    entity_table_share: float = 0.5
    top_keywords: int = 1000
    candidate_factor: float = 2.0

    def __post_init__(self) -> None:
        super().__post_init__()
        object.__setattr__(self, "entity_types", tuple(str(t) for t in self.entity_types))
        checks = [
            (self.chunk_size > 0, "chunk_size must be > 0"),
            (0 <= self.chunk_overlap < self.chunk_size, "chunk_overlap must be in [0, chunk_size)"),
            (0 <= self.splits <= 10, "splits (m) must be in [0, 10]"),
            (self.neighbor_top_k >= 0, "neighbor_top_k must be >= 0"),
            (0.0 <= self.budget <= 1.0, "budget (beta) must be in [0, 1]"),
            (self.selection in ("pagerank", "uniform"),
             "selection must be 'pagerank' or 'uniform'"),
            (0.0 < self.pagerank_alpha < 1.0, "pagerank_alpha must be in (0, 1)"),
            (self.max_gleanings >= 0, "max_gleanings must be >= 0"),
            (self.max_workers >= 1, "max_workers must be >= 1"),
            (self.context_tokens > 0, "context_tokens (L) must be > 0"),
            (0.0 <= self.graph_share <= 1.0, "graph_share (lambda) must be in [0, 1]"),
            (self.entity_top_k >= 1, "entity_top_k must be >= 1"),
            (self.relationship_top_k >= 0, "relationship_top_k must be >= 0"),
            (0.0 <= self.entity_table_share <= 1.0, "entity_table_share must be in [0, 1]"),
            (self.top_keywords >= 1, "top_keywords must be >= 1"),
            (self.candidate_factor >= 1.0, "candidate_factor must be >= 1"),
        ]
        for ok, message in checks:
            if not ok:
                raise ValueError(message)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> KETRAGConfig:
        """The config saved in an index's manifest; an index saved before the knobs were
        renamed (``knn_k``, ``top_k_entities``, ``top_k_relationships``) keeps its values."""
        data = {SAVED_NAMES.get(k, k): v for k, v in data.items()}
        return super().from_dict(data)

    def as_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["entity_types"] = list(self.entity_types)  # JSON has no tuples
        return data

    #: Parameters that only affect retrieval (may differ between the saved index and a query).
    RETRIEVAL_PARAMS = ("context_tokens", "graph_share", "entity_top_k", "relationship_top_k",
                        "entity_table_share", "top_keywords", "candidate_factor")
