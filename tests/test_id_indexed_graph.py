"""kgrag.graph.IdIndexedGraph: the methods take their id fast paths on the protocol, not on the
KnowledgeGraph class. A store that is no KnowledgeGraph but has the protocol's members (here a
forwarding proxy) gets the in-memory paths and the same results; a name-level store does not."""

from __future__ import annotations

import zlib

import numpy as np
from protocol_store import ProtocolStore

from kgrag.embed import LookupEmbedder
from kgrag.graph import GraphStore, IdIndexedGraph, KnowledgeGraph
from kgrag.methods.graphraft.backend import MemoryBackend, StoreBackend, as_backend

TRIPLES = [("Paprika", "directed_by", "Satoshi Kon"),
           ("Perfect Blue", "directed_by", "Satoshi Kon"),
           ("Paprika", "has_genre", "Anime"), ("Perfect Blue", "has_genre", "Thriller"),
           ("Satoshi Kon", "born_in", "Sapporo"),
           ("Tokyo Godfathers", "directed_by", "Satoshi Kon")]


def _members(protocol: type) -> set[str]:
    names: set[str] = set()
    for cls in protocol.__mro__:
        if cls in (object,) or not getattr(cls, "_is_protocol", False):
            continue
        names |= set(getattr(cls, "__annotations__", {}))
        names |= {n for n in vars(cls) if not n.startswith("__") and n != "_is_protocol"
                  and not n.startswith("_abc")}
    return names - {"_is_runtime_protocol"}


class IdProxy:
    """Every IdIndexedGraph member forwarded to a KnowledgeGraph; not a KnowledgeGraph."""

    def __init__(self, kg: KnowledgeGraph) -> None:
        self._kg = kg


for _name in _members(IdIndexedGraph):
    setattr(IdProxy, _name, property(lambda self, n=_name: getattr(self._kg, n)))


def _trigram_vector(text: str) -> np.ndarray:
    vec = np.zeros(64, np.float32)
    padded = f"  {text.lower()} "
    for i in range(len(padded) - 2):
        vec[zlib.crc32(padded[i:i + 3].encode()) % 64] += 1.0
    return vec


def test_the_protocol_is_what_decides_not_the_class():
    kg = KnowledgeGraph.from_triples(TRIPLES)
    proxy, names_only = IdProxy(kg), ProtocolStore(kg)
    assert isinstance(kg, IdIndexedGraph) and isinstance(proxy, IdIndexedGraph)
    assert not isinstance(proxy, KnowledgeGraph) and isinstance(proxy, GraphStore)
    assert not isinstance(names_only, IdIndexedGraph)
    assert isinstance(as_backend(proxy), MemoryBackend)
    assert isinstance(as_backend(names_only), StoreBackend)
    memory, on_proxy = as_backend(kg), as_backend(proxy)
    for entities in (["Paprika"], ["Paprika", "Sapporo"]):
        got, want = on_proxy.enumerate(entities), memory.enumerate(entities)
        assert [(c.pattern, c.total) for c in got] == [(c.pattern, c.total) for c in want]
        assert [on_proxy.execute(c.pattern) for c in got] == [memory.execute(c.pattern)
                                                              for c in want]


def test_simgrag_takes_the_array_path_on_any_id_indexed_store():
    from kgrag.methods.simgrag import SimGRAG

    kg = KnowledgeGraph.from_triples(TRIPLES)
    embedder = LookupEmbedder({"": np.ones(64)}, fallback=_trigram_vector)
    pattern = [("UNKNOWN film 1", "directed by", "Satoshi Kon"),
               ("UNKNOWN film 1", "has genre", "Anime")]
    on_proxy = SimGRAG(IdProxy(kg), embedder=embedder)
    assert on_proxy.kg is not None  # the in-memory search, not the store's
    a = SimGRAG(kg, embedder=embedder).retrieve_pattern(pattern)
    b = on_proxy.retrieve_pattern(pattern)
    assert [i.metadata["mapping"] for i in a.items] == [i.metadata["mapping"] for i in b.items]
    assert b.items[0].metadata["mapping"]["UNKNOWN film 1"] == "Paprika"
    assert SimGRAG(ProtocolStore(kg), embedder=embedder).kg is None
