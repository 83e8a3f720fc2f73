"""ByoKG-RAG's parameters in one place, with the paper's defaults (Mavromatis et al., 2025).

:class:`ByoKGConfig` holds every tuning knob of :class:`~kgrag.methods.byokg.ByoKGRAG`; the
components (LLM, embedder, linker, scorer, rerankers, prompts, cache) stay constructor
arguments. ``ByoKGRAG(graph, link_top_k=5)`` and
``ByoKGRAG(graph, config=ByoKGConfig(link_top_k=5))``
are the same method.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from kgrag.graph.base import Direction, check_direction
from kgrag.methods.config import MethodConfig

#: how triplets are retrieved around the linked entities
TRIPLET_MODES = ("agentic", "scoring", "none")


@dataclass(frozen=True)
class ByoKGConfig(MethodConfig):
    """ByoKG-RAG's knobs (paper defaults in brackets).

    - Linking: ``linking_mode`` [hybrid = fuzzy + dense], ``link_top_k`` [3; the paper's top-m]
      graph entities linked per mention.
    - Retrieval: ``iterations`` [T_R = 2], ``triplet_retrieval`` [agentic], ``agentic_hops``
      [T_A = 3], ``text_top_k`` [10; 0 disables the text-based union], ``scoring_top_k`` [10,
      the paper's non-Freebase k]; graph reranker (App. A.2): ``relation_top_k`` [20],
      ``triplet_top_k`` [100], ``reranker_hops`` [2].
    - Paths: ``direction`` ["both"; "out" = reference code], ``max_paths`` per metapath,
      ``shortest_path_hops``; ``use_cypher`` (``None`` = when the store runs Cypher),
      ``schema`` (the text shown to the LLM; ``None`` = the store's summary),
      ``max_schema_relations``.
    - ``on_unusable_reply`` ["raise"; "empty", "fallback" = the LLM-free mode].
    - Agentic caps (not in the paper): ``max_entities_per_hop``, ``max_triplets_per_hop``.
    - LLM-free mode: ``llm_free_hops`` [2], ``llm_free_max_paths``, ``llm_free_candidates``.
    """

    label: ClassVar[str] = "ByoKG-RAG"

    linking_mode: str = "hybrid"
    link_top_k: int = 3
    iterations: int = 2
    triplet_retrieval: str = "agentic"
    agentic_hops: int = 3
    text_top_k: int = 10
    scoring_top_k: int = 10
    relation_top_k: int = 20
    triplet_top_k: int = 100
    reranker_hops: int = 2
    direction: Direction = "both"
    max_paths: int = 200
    shortest_path_hops: int = 3
    use_cypher: bool | None = None
    schema: str | None = None
    max_schema_relations: int = 50
    max_entities_per_hop: int = 10
    max_triplets_per_hop: int = 200
    llm_free_hops: int = 2
    llm_free_max_paths: int = 100
    llm_free_candidates: int = 50

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.triplet_retrieval not in TRIPLET_MODES:
            raise ValueError(f"triplet_retrieval must be one of {TRIPLET_MODES}")
        if self.iterations < 1 or self.agentic_hops < 1 or self.link_top_k < 1:
            raise ValueError("iterations, agentic_hops and link_top_k must be at least 1")
        check_direction(self.direction)
