"""UltRAG's tuning knobs in one place, with the paper's defaults (:class:`UltRAGConfig`).

The components (LLM, embedder, linker, executor, arbitrator, prompts, checkpoint weights) stay
:class:`~kgrag.methods.ultrag.UltRAG` constructor arguments; everything else is a field here.
``UltRAG(kg, top_k=20)`` and ``UltRAG(kg, config=UltRAGConfig(top_k=20))`` are the same method.
"""

from __future__ import annotations

from dataclasses import dataclass
from numbers import Real
from typing import Any, ClassVar

from kgrag.errors import ConfigurationError
from kgrag.methods.config import MethodConfig
from kgrag.methods.ultrag.linking import DEFAULT_LINK_K, PAPER_SIGMA
from kgrag.methods.ultrag.neural import FULL_GRAPH_MAX_NODES
from kgrag.methods.ultrag.seppr import PAPER_ALPHA, PAPER_STEPS

#: entities shown to the arbitrator (the paper's top 50)
PAPER_ARBITRATION_TOP_K = 50
#: how quoted mentions are linked: Eq. 2 over embeddings, or names/aliases only
LINKING_MODES = ("dense", "exact")
#: the default membership floor of returned entities (ours; see UltRAGConfig.min_membership)
DEFAULT_MIN_MEMBERSHIP = 1e-3


@dataclass(frozen=True)
class UltRAGConfig(MethodConfig):
    """UltRAG's knobs (paper defaults in brackets; see :class:`~kgrag.methods.ultrag.UltRAG`).

    - Linking: ``linking`` ["dense"; "exact" needs no model], ``sigma`` [0.1] and
      ``link_top_k`` [10] (Eq. 2 temperature and candidates per mention).
    - Executors: ``projection`` ["max"], ``logic`` ["product"], ``soft_and`` [off],
      ``threshold`` [0]; neural: ``threads``, ``full_graph_max_nodes`` [50,000];
      GraphStores: ``store_hops`` [2], ``store_max_edges`` [200,000], ``max_frontier``
      [10,000]; ``relation_backoff`` [off].
    - Subgraphs: ``subgraph_k`` [off], ``seppr_alpha`` [0.85], ``seppr_steps`` [5].
    - Rounds and answers: ``top_k`` [50] entities returned and shown to the arbitrator,
      ``margin`` [0.05], ``max_reasks`` [1], ``max_rounds`` [1], ``on_unusable_reply``
      ["raise" or "empty"; docs/examples.md, "Unusable LLM replies"].
    - ``min_membership`` [ours; 0.001]: entities whose membership is below it are left out of
      what UltRAG returns (``retrieve`` / ``execute`` / ``ranked`` items, the arbitrator's
      candidates); ``0`` returns every entity with a non-zero score. The fuzzy sets themselves
      are never cut (``run().scores`` keeps every membership). The neural executor scores every
      entity, most of them near 0 (1e-21 ... 1e-4): the floor keeps those out of a top-50 list.
      ``retrieve`` says how many the floor removed (``metadata["below_min_membership"]``).
    - ``min_exact_answers`` [ours; 1]: the hybrid executor (the default) runs the neural one
      when a projection of the query has no exact answer or the exact answers are fewer than
      this; ``top_k`` makes neural guesses fill every ranking below the proved answers.
    """

    label: ClassVar[str] = "UltRAG"

    linking: str = "dense"
    sigma: float = PAPER_SIGMA
    link_top_k: int = DEFAULT_LINK_K
    projection: str = "max"
    logic: str = "product"
    threshold: float = 0.0
    soft_and: bool = False
    top_k: int = PAPER_ARBITRATION_TOP_K
    margin: float = 0.05
    max_reasks: int = 1
    max_rounds: int = 1
    subgraph_k: int | None = None
    seppr_alpha: float = PAPER_ALPHA
    seppr_steps: int = PAPER_STEPS
    max_frontier: int = 10_000
    relation_backoff: float | None = None
    threads: int | None = None
    full_graph_max_nodes: int = FULL_GRAPH_MAX_NODES
    store_hops: int = 2
    store_max_edges: int = 200_000
    min_membership: float = DEFAULT_MIN_MEMBERSHIP
    min_exact_answers: int = 1

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.threads is not None and self.threads < 1:
            raise ValueError("threads must be >= 1")
        if self.full_graph_max_nodes < 1 or self.store_hops < 1 or self.store_max_edges < 1:
            raise ValueError("full_graph_max_nodes, store_hops and store_max_edges must be >= 1")
        if self.linking not in LINKING_MODES:
            raise ValueError(f"linking must be one of {LINKING_MODES}, got {self.linking!r}")
        if self.top_k < 1 or self.max_reasks < 0 or self.max_rounds < 1:
            raise ValueError("top_k and max_rounds must be >= 1 and max_reasks >= 0")
        if self.subgraph_k is not None and self.subgraph_k < 1:
            raise ValueError("subgraph_k must be >= 1")
        check_min_membership(self.min_membership)
        if self.min_exact_answers < 1:
            raise ValueError("min_exact_answers must be >= 1")

    def executor_options(self) -> dict[str, Any]:
        """The symbolic executor's options."""
        return {"projection": self.projection, "logic": self.logic,
                "threshold": self.threshold, "soft_and": self.soft_and}


def check_min_membership(value: float) -> float:
    """``value`` as a membership floor: a number in [0, 1], else
    :class:`~kgrag.errors.ConfigurationError` (a ``ValueError``)."""
    if isinstance(value, bool) or not isinstance(value, Real) or not 0.0 <= value <= 1.0:
        raise ConfigurationError(f"min_membership must be a number in [0, 1], got {value!r}")
    return float(value)
