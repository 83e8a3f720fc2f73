"""SimGRAG's tuning knobs in one place, with the paper's MetaQA defaults (:class:`SimGRAGConfig`).

The components and data (LLM, embedder, node types, few-shot examples or an example pack,
prompts, precomputed node vectors) stay :class:`~kgrag.methods.simgrag.SimGRAG` constructor
arguments; everything else is a field here. ``SimGRAG(kg, top_k=5)`` and
``SimGRAG(kg, config=SimGRAGConfig(top_k=5))`` are the same method.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from kgrag.methods.config import MethodConfig
from kgrag.methods.simgrag.candidates import DEFAULT_HNSW_THRESHOLD, INDEX_KINDS
from kgrag.methods.simgrag.pattern import MAX_UNKNOWN_NODES, MAX_UNKNOWN_RELATIONS

#: how pattern nodes may share graph nodes (see ``injective``)
INJECTIVE_MODES = (True, False, "prefer")
#: what the answer prompt asks for
TASKS = ("qa", "fact")


@dataclass(frozen=True)
class SimGRAGConfig(MethodConfig):
    """SimGRAG's knobs (defaults in brackets; see :class:`~kgrag.methods.simgrag.SimGRAG`).

    - Retrieval: ``top_k`` [3] subgraphs returned; ``node_top_k`` [16] / ``relation_top_k``
      ["auto": every relation up to 512] / ``type_top_k`` [16] nearest candidates per pattern
      node, relation and type (the paper's k(n), k(r), k(t); FactKG/DBpedia used 16384 / 512).
    - Matching: ``injective`` ["prefer"; True, False], ``distinct_subgraphs`` [False],
      ``lookahead`` [True], work bounds ``max_partials`` [20,000,000] and ``time_limit``
      [30 s] per search, ``max_local_edges`` [2,000,000] for database stores.
    - Node vector index: ``index`` ["auto"], ``hnsw_threshold``, ``hnsw_m`` [32],
      ``ef_construction`` [200], ``ef_search_factor`` [8]; on a database store with node
      vectors, ``database_search_breadth`` [None: grows with the graph, 2,048 up to 600k
      nodes, 8,192 at 2.4M; see ``db_candidates.auto_breadth``] nodes asked of its vector
      index per pattern node (the HNSW beam; the best 4 x k(n) are re-scored exactly).
    - LLM steps: ``task`` ["qa" or "fact"], ``retries`` [1] re-asks of an unparsable pattern
      (or a blank answer), ``on_unusable_reply`` ["raise" or "empty"; docs/examples.md,
      "Unusable LLM replies"], ``humanize_relations`` [True] (``directed_by`` is embedded as
      "directed by").
    - Pattern budget: ``max_unknown_nodes`` [4] distinct UNKNOWN nodes and
      ``max_unknown_relations`` [3] UNKNOWN relations per pattern; more is refused up front
      with a reason the re-ask quotes (``None`` lifts a limit; see
      :mod:`~kgrag.methods.simgrag.pattern`, "Work budget").
    """

    label: ClassVar[str] = "SimGRAG"

    top_k: int = 3
    node_top_k: int = 16
    relation_top_k: int | str = "auto"
    type_top_k: int = 16
    injective: bool | str = "prefer"
    distinct_subgraphs: bool = False
    task: str = "qa"
    retries: int = 1
    index: str = "auto"
    hnsw_threshold: int = DEFAULT_HNSW_THRESHOLD
    hnsw_m: int = 32
    ef_construction: int = 200
    ef_search_factor: int = 8
    database_search_breadth: int | None = None
    max_partials: int | None = 20_000_000
    time_limit: float | None = 30.0
    lookahead: bool = True
    max_local_edges: int = 2_000_000
    humanize_relations: bool = True
    max_unknown_nodes: int | None = MAX_UNKNOWN_NODES
    max_unknown_relations: int | None = MAX_UNKNOWN_RELATIONS

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.top_k < 1:
            raise ValueError("top_k must be at least 1")
        if self.injective not in INJECTIVE_MODES:
            raise ValueError("injective must be True, False or 'prefer'")
        if self.task not in TASKS:
            raise ValueError("task must be 'qa' or 'fact'")
        if self.relation_top_k != "auto" and (isinstance(self.relation_top_k, str)
                                              or self.relation_top_k < 1):
            raise ValueError("relation_top_k must be a positive integer or 'auto'")
        if self.database_search_breadth is not None and self.database_search_breadth < 1:
            raise ValueError("database_search_breadth must be at least 1")
        if self.node_top_k < 1 or self.type_top_k < 1:
            raise ValueError("node_top_k and type_top_k must be at least 1")
        if self.index not in INDEX_KINDS:
            raise ValueError(f"index must be one of {INDEX_KINDS}, got {self.index!r}")
        if self.retries < 0:
            raise ValueError("retries must be >= 0")
        if self.max_partials is not None and self.max_partials < 0:
            raise ValueError("max_partials must be >= 0 or None")
        if self.time_limit is not None and self.time_limit < 0:
            raise ValueError("time_limit must be >= 0 or None")
        if self.max_local_edges < 1:
            raise ValueError("max_local_edges must be >= 1")
        for name in ("max_unknown_nodes", "max_unknown_relations"):
            value = getattr(self, name)
            if value is not None and value < 0:
                raise ValueError(f"{name} must be >= 0 or None")
