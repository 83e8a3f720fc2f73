"""One set of name vectors per graph and embedder, shared by every method built over them.

SimGRAG, UltRAG, GraphRAFT and ByoKG-RAG all embed the graph's node names (and relation names,
as words). :func:`graph_name_vectors` computes each list once per process and graph -- the memo
hangs off the graph object through a ``WeakKeyDictionary``, so it goes away with the graph --
and once per machine through the on-disk cache (:mod:`kgrag.embed.store`).

Embedders are told apart by :func:`~kgrag.embed.store.embedder_cache_key` when they have one
(two ``SentenceTransformerEmbedder`` objects of the same model share vectors), otherwise by the
object itself (a weak reference, so a new embedder that happens to reuse a dead one's ``id``
never gets its vectors).

>>> from kgrag.embed import LookupEmbedder
>>> from kgrag.graph import KnowledgeGraph
>>> kg = KnowledgeGraph.from_triples([("a", "r", "b")])
>>> emb = LookupEmbedder({"a": [1, 0], "b": [0, 1], "r": [1, 1]})
>>> graph_name_vectors(kg, emb, "nodes") is graph_name_vectors(kg, emb, "nodes")
True
"""

from __future__ import annotations

import threading
import weakref
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from kgrag.embed.store import embed_cached, embedder_cache_key
from kgrag.text.names import relation_words

if TYPE_CHECKING:  # pragma: no cover
    from kgrag.graph.base import GraphStore

KINDS = ("nodes", "relations")

_memo: weakref.WeakKeyDictionary[Any, dict[tuple[Any, str], _Entry]] = weakref.WeakKeyDictionary()
_lock = threading.Lock()
#: per graph and (embedder, kind): the lock a computation of those vectors holds
_build_locks: weakref.WeakKeyDictionary[Any, dict[tuple[Any, str], threading.Lock]] = (
    weakref.WeakKeyDictionary())


class _Entry:
    __slots__ = ("embedder_ref", "extras", "texts", "vectors")

    def __init__(self, vectors: np.ndarray, texts: list[str], embedder: Any) -> None:
        self.vectors = vectors
        self.texts = texts
        try:
            self.embedder_ref: Any = weakref.ref(embedder)
        except TypeError:  # not weak-referenceable: keep it alive with the graph
            self.embedder_ref = lambda e=embedder: e
        self.extras: dict[Any, Any] = {}  # derived indexes (e.g. FAISS), see kgrag.linking


def graph_texts(graph: GraphStore, kind: str) -> list[str]:
    """The texts embedded for ``kind``: node names as they are, relation names as words."""
    if kind == "nodes":
        return list(graph.iter_node_names())
    if kind == "relations":
        return [relation_words(str(r)) for r in graph.list_relations()]
    raise ValueError(f"kind must be one of {KINDS}, got {kind!r}")


def _identity(embedder: Any) -> Any:
    key = embedder_cache_key(embedder)
    return ("key", key) if key is not None else ("object", id(embedder))


def _building_lock(graph: Any, key: tuple[Any, str]) -> threading.Lock:
    """The lock under which ``key``'s vectors of ``graph`` are computed (one per key)."""
    with _lock:
        try:
            per_graph = _build_locks.setdefault(graph, {})
        except TypeError:  # not weakly referenceable: one lock per key, never shared anyway
            return threading.Lock()
        return per_graph.setdefault(key, threading.Lock())


def _fresh(entry: _Entry | None, texts: list[str], ident: Any, embedder: Any) -> bool:
    return entry is not None and entry.texts == texts and (
        ident[0] == "key" or entry.embedder_ref() is embedder)


def _entry(graph: GraphStore, embedder: Any, kind: str, texts: Sequence[str] | None) -> _Entry:
    texts = list(texts) if texts is not None else graph_texts(graph, kind)
    ident = _identity(embedder)
    try:
        with _lock:
            per_graph = _memo.setdefault(graph, {})
    except TypeError:  # a graph that cannot be weakly referenced: no in-process sharing
        per_graph = {}
    entry = per_graph.get((ident, kind))
    if _fresh(entry, texts, ident, embedder):
        assert entry is not None
        return entry
    # Single flight: threads that ask for the same vectors at once (the first requests of a
    # server) wait for one computation instead of each embedding every name of the graph.
    with _building_lock(graph, (ident, kind)):
        entry = per_graph.get((ident, kind))
        if _fresh(entry, texts, ident, embedder):
            assert entry is not None
            return entry
        vectors = embed_cached(embedder, texts, kind=kind)
        entry = _Entry(vectors, texts, embedder)
        with _lock:
            per_graph[(ident, kind)] = entry
    return entry


def graph_name_vectors(graph: GraphStore, embedder: Any, kind: str = "nodes") -> np.ndarray:
    """Unit vectors of the graph's node names (``kind="nodes"``, row i = node id i) or relation
    names as words (``"relations"``), computed at most once per graph, embedder and process,
    and read from the on-disk cache when possible. Treat the result as read-only: it is shared.
    """
    return _entry(graph, embedder, kind, None).vectors


def graph_extras(graph: GraphStore, embedder: Any, kind: str = "nodes") -> dict[Any, Any]:
    """A dict that lives as long as the shared vectors of (graph, embedder, kind): where
    derived structures (FAISS indexes) are kept so every method reuses them too."""
    return _entry(graph, embedder, kind, None).extras


def forget(graph: GraphStore) -> None:
    """Drop the shared vectors of ``graph`` in this process (the disk cache stays)."""
    with _lock:
        _memo.pop(graph, None)
        _build_locks.pop(graph, None)
