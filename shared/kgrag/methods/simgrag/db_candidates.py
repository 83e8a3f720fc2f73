"""SimGRAG's node candidates from a graph database's own vector index (no name leaves it).

On a database store whose node vectors were written by ``kgrag index-db`` / ``kgrag load-db
--embed`` with SimGRAG's embedder (:mod:`kgrag.graph.cypher.vectors`), the k(n) nearest nodes of a
pattern node come from the database vector index (FalkorDB / Neo4j HNSW: approximate, recall
measured in docs/graph-databases.md): the index searches with a beam of ``breadth`` (default
:func:`auto_breadth`, 2,048 up to ~600k nodes: the database's HNSW widens its beam to the number
asked for), the database keeps its best ``oversample x k(n)``, and those are re-scored exactly --
their stored vectors fetched and the L2 distance to the pattern node's vector computed as in
memory, so the Graph Semantic Distance is the in-memory one and the best k(n) are kept. Node ids
are positions in a :class:`GrowingNameTable` that holds only the names some search has returned --
never the graph's full name list.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable
from typing import Any

import numpy as np

from kgrag.methods.simgrag.search import CandidateSet

#: the database returns its best ``oversample x k`` nodes, which are re-scored exactly
OVERSAMPLE = 4

#: the smallest default search beam: FalkorDB's HNSW (efRuntime 100) found 0.80 of the exact 16
#: nearest of 243k random 64-d vectors asking for 16 or 100, 0.97 asking for 800, 0.99 for 1,600
BREADTH = 2048
#: the default beam grows by one node per this many indexed nodes (rounded up to a power of
#: two): at 2.4M random 64-d vectors (efConstruction 200) a 2,048 beam found 0.91 of the exact
#: 16 nearest, 4,096 0.97, 8,192 0.99 (docs/graph-databases.md)
NODES_PER_BEAM_NODE = 300
#: the largest default beam (1.000 at 2.4M nodes; 0.25 s per query there)
MAX_AUTO_BREADTH = 32768


def auto_breadth(nodes: int) -> int:
    """The default search beam for an index over ``nodes`` nodes: :data:`BREADTH` up to
    ~600k nodes, then ``nodes / NODES_PER_BEAM_NODE`` rounded up to a power of two, at most
    :data:`MAX_AUTO_BREADTH`. HNSW needs a wider beam for the same recall as the index grows;
    fitted on two sizes of random vectors (the hardest case), so a guide, not a guarantee:
    set ``database_search_breadth`` to override."""
    wanted = max(BREADTH, -(-int(nodes) // NODES_PER_BEAM_NODE))
    return min(MAX_AUTO_BREADTH, 1 << (wanted - 1).bit_length())


class GrowingNameTable(list):
    """A name list that grows as searches return names: ``id_of(name)`` appends a new name
    and returns its position (thread-safe). Only ever holds names some search returned."""

    def __init__(self) -> None:
        super().__init__()
        self._ids: dict[str, int] = {}
        self._lock = threading.Lock()

    def id_of(self, name: str) -> int:
        with self._lock:
            found = self._ids.get(name)
            if found is None:
                found = self._ids[name] = len(self)
                self.append(name)
            return found

    def ids_of(self, names: Iterable[str]) -> list[int]:
        return [self.id_of(n) for n in names]


class DatabaseNodeSearch:
    """``search(queries, k)`` -> one :class:`CandidateSet` per query row, from the database's
    vector index (see the module docstring); the interface of SimGRAG's in-memory NameIndex."""

    kind = "database"

    def __init__(self, store: Any, index: Any, names: GrowingNameTable, prop: str,
                 oversample: int = OVERSAMPLE, breadth: int = BREADTH) -> None:
        self.store = store
        self.index = index
        self.names = names
        self.prop = prop
        self.oversample = max(1, int(oversample))
        self.breadth = max(1, int(breadth))

    def __len__(self) -> int:
        return int(self.store.counts()["nodes"])

    def search(self, queries: np.ndarray, k: int) -> list[CandidateSet]:
        from kgrag.graph.cypher.vectors import fetch_node_vectors

        queries = np.asarray(np.atleast_2d(queries), np.float32)
        out = []
        for query in queries:
            hits = [name for name, _ in self.store.vector_search(
                self.index, [float(x) for x in query], int(k) * self.oversample,
                breadth=self.breadth)]
            vectors = fetch_node_vectors(self.store, hits, self.prop)
            found = [n for n in dict.fromkeys(hits) if n in vectors]
            if not found:
                out.append(CandidateSet(np.empty(0, np.int64), np.empty(0)))
                continue
            matrix = np.stack([vectors[n] for n in found])
            squared = np.sum((matrix - query) ** 2, axis=1, dtype=np.float32)
            dist = np.sqrt(np.maximum(squared, 0.0).astype(np.float64))
            keep = sorted(range(len(found)), key=lambda i: (float(dist[i]), found[i]))[:int(k)]
            out.append(CandidateSet(np.asarray(self.names.ids_of([found[i] for i in keep]),
                                               np.int64), dist[keep]))
        return out
