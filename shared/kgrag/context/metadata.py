"""Provenance of retrieved items as flat, primitive metadata (used by both framework adapters).

Vector stores and metadata filters accept only flat metadata whose values are ``str``, ``int``,
``float``, ``bool`` or ``None``. :func:`ranked_records` therefore keeps every primitive field at
the top level and serialises the nested ones (a path's node list, a SimGRAG mapping, a KET-RAG
chunk's source ids, ...) as one JSON object under ``"provenance"``; the question's LLM usage is
spread over ``usage_*`` integers and the method-level provenance (the SimGRAG pattern, the UltRAG
query, ...) is JSON under ``"retrieval"``. :func:`unflatten` restores the nested view.

Every record has a stable id: a hash of the method name and the item text, so the same fact
retrieved twice (by two questions, or two runs) has the same ``Document.id`` / node id.
"""

from __future__ import annotations

import hashlib
import json
import math
from dataclasses import asdict, dataclass, is_dataclass
from typing import Any

from kgrag.context.types import Chunk, Path, RetrievalResult, ScoredEntity, Subgraph, Triple

#: the metadata key holding the item's nested provenance as a JSON object
PROVENANCE_KEY = "provenance"
#: the metadata key holding the method-level provenance of the retrieval as a JSON object
RETRIEVAL_KEY = "retrieval"
#: result metadata left out of every record (large, and the same for all of them)
_RESULT_KEYS_SKIPPED = frozenset({"context"})


def item_metadata(item: Any) -> dict[str, Any]:
    """JSON-friendly (possibly nested) provenance of one retrieved item: type, fields, score."""
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
        # the source document's own metadata ("source", "page", ...) is what a framework user
        # filters on: its primitive fields are also surfaced at the top level (never
        # replacing kgrag's own keys)
        for key, value in (item.metadata.get("doc_metadata") or {}).items():
            if key not in meta and _primitive(value) is not NotImplemented:
                meta[key] = value
    elif is_dataclass(item) and not isinstance(item, type):
        meta.update(asdict(item))
    return meta


def _primitive(value: Any) -> Any:
    """``value`` as a JSON/metadata primitive when it is one (numpy scalars included), else a
    sentinel ``NotImplemented``."""
    if value is None or isinstance(value, (str, bool)):
        return value
    if isinstance(value, int):
        return int(value)
    if isinstance(value, float):
        return float(value) if math.isfinite(value) else str(value)
    item = getattr(value, "item", None)  # numpy scalar
    if callable(item) and getattr(value, "shape", None) == ():
        return _primitive(item())
    return NotImplemented


def _json_default(value: Any) -> Any:
    if isinstance(value, (set, frozenset, tuple)):
        return list(value)
    if hasattr(value, "tolist"):
        return value.tolist()
    if is_dataclass(value) and not isinstance(value, type):
        return asdict(value)
    return str(value)


def to_json(value: Any) -> str:
    """Compact, deterministic JSON (sets, tuples, numpy values and dataclasses converted)."""
    return json.dumps(value, default=_json_default, ensure_ascii=False, sort_keys=True,
                      separators=(",", ":"))


def flatten(meta: dict[str, Any], *, key: str = PROVENANCE_KEY) -> dict[str, Any]:
    """Primitive values kept; every other value moved, as JSON, into one object under ``key``."""
    flat: dict[str, Any] = {}
    nested: dict[str, Any] = {}
    for name, value in meta.items():
        prim = _primitive(value)
        if prim is NotImplemented:
            nested[name] = value
        else:
            flat[str(name)] = prim
    if nested:
        flat[key] = to_json(nested)
    return flat


def unflatten(meta: dict[str, Any]) -> dict[str, Any]:
    """The nested view of flat record metadata: ``provenance`` and ``retrieval`` decoded.

    >>> unflatten({"rank": 0, "provenance": '{"nodes":["a","b"]}'})
    {'rank': 0, 'nodes': ['a', 'b']}
    """
    out = {k: v for k, v in meta.items() if k not in (PROVENANCE_KEY, RETRIEVAL_KEY)}
    if isinstance(meta.get(PROVENANCE_KEY), str):
        out.update(json.loads(meta[PROVENANCE_KEY]))
    if isinstance(meta.get(RETRIEVAL_KEY), str):
        out[RETRIEVAL_KEY] = json.loads(meta[RETRIEVAL_KEY])
    return out


def item_id(method: str, text: str) -> str:
    """Stable id of a retrieved item: SHA-1 of the method name and the item's text."""
    return hashlib.sha1(f"{method}\x00{text}".encode()).hexdigest()


def usage_metadata(result: RetrievalResult) -> dict[str, int]:
    """The question's LLM usage as flat ``usage_*`` integers."""
    return {f"usage_{k}": int(v) for k, v in result.usage.as_dict().items()}


@dataclass(frozen=True)
class RankedRecord:
    """One retrieved item ready for a framework: stable id, text, flat metadata, score."""

    id: str
    text: str
    metadata: dict[str, Any]
    score: float | None


def ranked_records(result: RetrievalResult, k: int | None = None) -> list[RankedRecord]:
    """The first ``k`` items (all when ``None``) as :class:`RankedRecord` s, in rank order.

    Each record's metadata holds the item's primitive fields, ``provenance`` (its nested
    fields, JSON), ``rank``, ``method``, ``question``, the question's ``usage_*`` counts and
    ``retrieval`` (the method-level provenance, JSON, without the verbalised context).
    """
    if k is not None and k < 0:
        raise ValueError("k must be >= 0 or None")
    items = result.items if k is None else result.items[:k]
    shared: dict[str, Any] = {"method": result.method, "question": result.question,
                              **usage_metadata(result)}
    provenance = {k2: v for k2, v in result.metadata.items() if k2 not in _RESULT_KEYS_SKIPPED}
    if provenance:
        shared[RETRIEVAL_KEY] = to_json(provenance)
    records = []
    for rank, item in enumerate(items):
        text = item.verbalize()
        meta = flatten(item_metadata(item))
        meta.update(rank=rank, **shared)
        score = getattr(item, "score", None)
        records.append(RankedRecord(item_id(result.method, text), text, meta,
                                    None if score is None else float(score)))
    return records


def ranked_items(result: RetrievalResult) -> list[tuple[str, dict[str, Any], float | None]]:
    """``(text, nested metadata, score)`` per item in rank order, metadata including rank,
    method and question (the unflattened view; the adapters use :func:`ranked_records`)."""
    out = []
    for rank, item in enumerate(result.items):
        meta = item_metadata(item)
        meta.update(rank=rank, method=result.method, question=result.question)
        out.append((item.verbalize(), meta, getattr(item, "score", None)))
    return out
