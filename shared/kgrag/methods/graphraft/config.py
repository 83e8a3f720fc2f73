"""GraphRAFT's tuning knobs in one place, with the paper's defaults (:class:`GraphRAFTConfig`).

Paper: Clemedtson & Shi, "GraphRAFT" (arXiv 2504.05478). The components (LLMs, token scorer,
selector, embedder, linker, few-shot entity examples, prompts) stay
:class:`~kgrag.methods.graphraft.pipeline.GraphRAFT` constructor arguments; everything else is a
field here. ``GraphRAFT(kg, top_k=10)`` and ``GraphRAFT(kg, config=GraphRAFTConfig(top_k=10))``
are the same method.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from kgrag.methods.config import MethodConfig
from kgrag.methods.graphraft.patterns import FAMILIES


@dataclass(frozen=True)
class GraphRAFTConfig(MethodConfig):
    """GraphRAFT's knobs (paper defaults in brackets).

    - ``top_k`` [20]: nodes in the retrieved context (the reference implementation's context
      size; the selected queries' nodes, topped up by a vector search over node names).
    - ``beam_width`` [m = 5]: candidate queries the selector keeps (constrained decoding's
      beam, the chat choice's list, or the embedding ranking's top).
    - ``families`` [all: ``1hop``, ``2hop``, ``2path``]: the query templates enumerated around
      the linked entities (:data:`~kgrag.methods.graphraft.patterns.FAMILIES`).
    - ``on_unusable_reply`` ["raise"; "empty", "fallback" = the LLM-free mode]: an L0 reply
      naming no entity, a selection naming no listed candidate, or a blank answer, still so
      after one re-ask.
    """

    label: ClassVar[str] = "GraphRAFT"

    top_k: int = 20
    beam_width: int = 5
    families: tuple[str, ...] = FAMILIES

    def __post_init__(self) -> None:
        super().__post_init__()
        object.__setattr__(self, "families", tuple(self.families))
        unknown = [f for f in self.families if f not in FAMILIES]
        if unknown:
            raise ValueError(f"families must be a subset of {FAMILIES}, got "
                             f"{self.families!r}")
        if self.top_k < 0 or self.beam_width < 0:
            raise ValueError("top_k and beam_width must be >= 0")
