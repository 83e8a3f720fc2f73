"""Provenance of retrieved items as JSON-friendly metadata (used by both framework adapters)."""

from __future__ import annotations

from dataclasses import asdict, is_dataclass
from typing import Any

from kgrag.context.types import Chunk, Path, RetrievalResult, ScoredEntity, Subgraph, Triple


def item_metadata(item: Any) -> dict[str, Any]:
    """JSON-friendly provenance of one retrieved item (type, its fields, score)."""
    kind = type(item).__name__.lower()
    meta: dict[str, Any] = {"kgrag_type": kind, "score": getattr(item, "score", None)}
    if isinstance(item, Triple):
        meta.update(head=item.head, relation=item.relation, tail=item.tail)
    elif isinstance(item, Path):
        meta.update(nodes=list(item.nodes), relations=list(item.relations),
                    forward=list(item.forward))
    elif isinstance(item, Subgraph):
        meta.update(triples=[list(t.as_tuple()) for t in item.triples], **item.metadata)
    elif isinstance(item, ScoredEntity):
        meta.update(entity=item.name, found_by=item.source, **item.metadata)
    elif isinstance(item, Chunk):
        meta.update(chunk_id=item.chunk_id, **item.metadata)
    elif is_dataclass(item):
        meta.update(asdict(item))
    return meta



def ranked_items(result: RetrievalResult) -> list[tuple[str, dict[str, Any], float | None]]:
    """``(text, metadata, score)`` per item in rank order, metadata including rank and method."""
    out = []
    for rank, item in enumerate(result.items):
        meta = item_metadata(item)
        meta.update(rank=rank, method=result.method, question=result.question)
        out.append((item.verbalize(), meta, getattr(item, "score", None)))
    return out
