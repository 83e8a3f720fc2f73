"""Result types, verbalizers and token budgets shared by all methods."""

from kgrag.context.types import (
    Answer,
    Chunk,
    Path,
    RetrievalResult,
    RetrievedItem,
    ScoredEntity,
    Subgraph,
    Triple,
    Usage,
)

__all__ = [
    "Answer",
    "Chunk",
    "Path",
    "RetrievalResult",
    "RetrievedItem",
    "ScoredEntity",
    "Subgraph",
    "Triple",
    "Usage",
]
