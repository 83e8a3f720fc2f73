"""UltRAG's neural executor: UltraQuery projections behind the shared fuzzy-query evaluator.

* :class:`UltraQueryProjector` -- a :class:`~kgrag.methods.ultrag.executor.Projector` whose
  projection is the UltraQuery network (:mod:`kgrag.methods.ultrag.ultraquery`); it batches the
  projections that are ready at the same time (e.g. the branches of an ``AND``) into one
  forward pass.
* :class:`NeuralFuzzyExecutor` -- the evaluator of
  :class:`~kgrag.methods.ultrag.executor.FuzzyQueryExecutor` over those projections with
  UltraQuery's product logic: the same AND / OR / NOT code as the symbolic executor, only the
  projection differs.
* :func:`store_subgraph` -- the graph a neural query on a database runs on: the neighbourhood of
  the query's anchors fetched from the store, then cut to its SEPPR top-k (the paper's Alg. 2).

**Size rule.** One projection costs six message-passing layers over *every* node and edge of the
graph it runs on (about 3.5 us per node on one core: 0.14 s on MetaQA's 43k nodes). UltRAG runs the
whole graph when it has at most :data:`FULL_GRAPH_MAX_NODES` nodes, and otherwise (and always on
a database store) the SEPPR subgraph of ``subgraph_k`` nodes (paper: 30,000) around the query's
anchors -- the paper's Algorithm 2, which it uses for Wikidata.
"""

from __future__ import annotations

import threading
import weakref
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import ClassVar

import numpy as np

from kgrag.context.types import Triple
from kgrag.graph.base import GraphStore, IdIndexedGraph
from kgrag.graph.memory import KnowledgeGraph, normalize_name
from kgrag.methods.ultrag.executor import FUZZY_DTYPE, FuzzyQueryExecutor
from kgrag.methods.ultrag.seppr import PAPER_ALPHA, PAPER_STEPS, seppr_nodes
from kgrag.methods.ultrag.ultraquery import PreparedGraph, UltraQueryModel, torch_threads
from kgrag.methods.ultrag.vocabulary import GraphVocabulary

#: whole-graph forward passes up to this many nodes; larger graphs run on SEPPR subgraphs
FULL_GRAPH_MAX_NODES = 50_000
#: most projections in one forward pass (memory grows with it: batch x nodes x 64 floats).
#: 1 by default: on a 2-core CPU a batch of 2 or 4 projections measured slower than running
#: them one after another on MetaQA (memory-bound layers); raise it on larger machines.
DEFAULT_BATCH = 1

_models: dict[str, UltraQueryModel] = {}
_models_lock = threading.Lock()


def shared_model(weights: str | Path | None = None) -> UltraQueryModel:
    """One loaded :class:`UltraQueryModel` per checkpoint path per process (``None`` = packaged)."""
    key = str(Path(weights).resolve()) if weights is not None else ""
    with _models_lock:
        model = _models.get(key)
        if model is None:
            model = UltraQueryModel(weights)
            _models[key] = model
        return model


class UltraQueryProjector:
    """UltraQuery as a relation projection on one in-memory graph.

    Parameters
    ----------
    kg: the graph (its edges are read once into the model's form, cached per graph).
    weights: an ``.npz`` checkpoint path (default: the packaged one) or a loaded model.
    threads: torch threads for the forward pass (``None`` = torch's current setting).
    threshold: UltraQuery's intermediate threshold -- input memberships at or below it are
        zeroed before a projection (0.0 for the packaged checkpoint).
    batch_size: most projections per forward pass.
    """

    _prepared: ClassVar[weakref.WeakKeyDictionary[IdIndexedGraph, PreparedGraph]] = \
        weakref.WeakKeyDictionary()
    _prepared_lock = threading.Lock()

    def __init__(self, kg: IdIndexedGraph, *, weights: str | Path | UltraQueryModel | None = None,
                 threads: int | None = None, threshold: float = 0.0,
                 batch_size: int = DEFAULT_BATCH) -> None:
        if threads is not None and threads < 1:
            raise ValueError("threads must be >= 1")
        if batch_size < 1:
            raise ValueError("batch_size must be >= 1")
        self.model = weights if isinstance(weights, UltraQueryModel) else shared_model(weights)
        self.kg = kg
        self.num_nodes = kg.num_nodes
        self.num_relations = kg.num_relations
        self.threads = threads
        self.threshold = threshold
        self.batch_size = batch_size

    @property
    def graph(self) -> PreparedGraph:
        """The graph in the model's form (entity + relation graphs), built once per graph."""
        with self._prepared_lock:
            found = self._prepared.get(self.kg)
        if found is None:
            found = self.model.prepare(self.kg.heads, self.kg.rels, self.kg.tails,
                                       self.kg.num_nodes, self.kg.num_relations)
            with self._prepared_lock:
                self._prepared[self.kg] = found
        return found

    def project(self, x: np.ndarray, relation: int, inverse: bool) -> np.ndarray:
        return self.project_many(np.asarray(x, FUZZY_DTYPE)[None], [relation], [inverse])[0]

    def project_many(self, xs: np.ndarray, relations: Sequence[int],
                     inverses: Sequence[bool]) -> np.ndarray:
        """``(batch, num_nodes)`` memberships of ``xs[i] -> relations[i]`` (inverse: ``_inv``)."""
        xs = np.asarray(xs, dtype=FUZZY_DTYPE)
        types = [int(r) + (self.num_relations if inv else 0)
                 for r, inv in zip(relations, inverses)]
        out = np.empty((len(types), self.num_nodes), dtype=FUZZY_DTYPE)
        if self.num_nodes == 0:
            return out
        graph = self.graph
        with torch_threads(self.threads):
            for start in range(0, len(types), self.batch_size):
                stop = start + self.batch_size
                out[start:stop] = self.model.project(graph, xs[start:stop], types[start:stop],
                                                     self.threshold).numpy()
        return out


class NeuralFuzzyExecutor(FuzzyQueryExecutor):
    """UltraQuery: neural projections, fuzzy AND / OR / NOT (product logic by default).

    >>> from kgrag.methods.ultrag import one_hot
    >>> kg = KnowledgeGraph.from_triples([("Paprika", "directed_by", "Satoshi Kon"),
    ...                                   ("Perfect Blue", "directed_by", "Satoshi Kon")])
    >>> scores = NeuralFuzzyExecutor(kg).execute("Q0 -> P0", [one_hot([0], kg.num_nodes)])
    >>> kg.node_names[int(scores.argmax())], bool(((scores >= 0) & (scores <= 1)).all())
    ('Satoshi Kon', True)
    """

    num_nodes: int  # always over node ids (an ArraySets algebra)

    def __init__(self, kg: IdIndexedGraph, *, weights: str | Path | UltraQueryModel | None = None,
                 logic: str = "product", threshold: float = 0.0, soft_and: bool = False,
                 threads: int | None = None, batch_size: int = DEFAULT_BATCH,
                 vocabulary: GraphVocabulary | None = None) -> None:
        projector = UltraQueryProjector(kg, weights=weights, threads=threads,
                                        threshold=threshold, batch_size=batch_size)
        # the threshold is UltraQuery's (on a projection's input), not a cut of its output
        super().__init__(projector, vocabulary or GraphVocabulary.from_graph(kg), logic=logic,
                         soft_and=soft_and)
        self.kg = kg
        self.model_threshold = threshold


# ---------------------------------------------------------------------------- stores (Alg. 2)
def budgeted_neighbourhood(store: GraphStore, names: Sequence[str], *, hops: int = 2,
                           max_edges: int = 200_000) -> list[Triple]:
    """The edges of the ``hops``-hop neighbourhood of ``names`` that a read of at most
    ``max_edges`` edges reaches, smallest nodes first.

    Level 1 reads the seeds' edges (``k_hop_subgraph``'s cap when they are more than
    ``max_edges``). Each later level first counts the frontier nodes' edges
    (``neighbour_counts`` on a database store, cheap even for a hub; ``degree`` otherwise),
    then reads the edges of the frontier nodes in ascending (count, name) order while their
    counts fit in what is left of the budget. A node whose edges do not fit -- a hub -- stays
    in the subgraph by the edge that reached it, unexpanded.

    Why smallest first: SEPPR (Alg. 2) keeps the nodes where a walk restarting at the seeds
    spends its time, and a walk through a node of degree ``d`` reaches each of its neighbours
    with probability ``1/d``, so a hub's neighbours each get little of the mass, while reading
    them is what a database charges for (FalkorDB: ~80 us per named edge). The earlier
    breadth-first read in name order had the server sort a hub's whole 2-hop neighbourhood: at
    10M edges that query ran past the server's timeout.
    """
    seen = set(names)
    taken: set[Triple] = set()
    counter = getattr(store, "neighbour_counts", None) or store.degree
    frontier = sorted(seen)
    for level in range(hops):
        room = max_edges - len(taken)
        if not frontier or room <= 0:
            break
        chosen = frontier  # the seeds are always read (up to the cap)
        if level > 0:
            counts = counter(frontier)
            chosen, total = [], 0
            for name in sorted(frontier, key=lambda n: (counts.get(n, 0), n)):
                total += counts.get(name, 0)
                if total > room:
                    break
                chosen.append(name)
        # beyond the seeds the cap binds only where the counts undercount (parallel edges
        # counted as pairs)
        fresh = store.k_hop_subgraph(chosen, hops=1, max_edges=room) if chosen else []
        level_edges = [t for t in fresh if t not in taken]
        taken.update(level_edges)
        ends = {t.head for t in level_edges} | {t.tail for t in level_edges}
        frontier = sorted(ends - seen)
        seen.update(frontier)
    return sorted(taken, key=Triple.as_tuple)


def store_subgraph(store: GraphStore, relation_names: Sequence[str], seeds: Mapping[str, float], *,
                   hops: int = 2, max_edges: int = 200_000, k: int = 30_000,
                   alpha: float = PAPER_ALPHA, steps: int = PAPER_STEPS
                   ) -> tuple[IdIndexedGraph, dict[str, float]]:
    """The graph a neural query runs on over a database, and its leaf seeds by name.

    Fetches the ``hops``-hop neighbourhood of the seed entities from the store within
    ``max_edges`` edges (:func:`budgeted_neighbourhood`: hubs beyond the first level are kept
    as nodes but not expanded), then keeps the SEPPR top-``k`` nodes of it (Alg. 2, with the
    fuzzy seeds as restart distribution) and every fetched edge between them. Relation ids are
    the store's relation list order, so queries bind the same way.
    """
    names = [normalize_name(n) for n in seeds]
    triples = budgeted_neighbourhood(store, names, hops=hops, max_edges=max_edges)
    index: dict[str, int] = {}
    for name in names:
        index.setdefault(name, len(index))
    rel_index = {r: i for i, r in enumerate(relation_names)}
    heads, rels, tails = [], [], []
    for t in triples:
        rel = rel_index.get(t.relation)
        if rel is None:
            continue
        heads.append(index.setdefault(t.head, len(index)))
        tails.append(index.setdefault(t.tail, len(index)))
        rels.append(rel)
    node_names = list(index)
    local = KnowledgeGraph.from_arrays(np.asarray(heads, np.int64), np.asarray(rels, np.int64),
                                       np.asarray(tails, np.int64), node_names,
                                       list(relation_names))
    seed_vec = np.zeros(local.num_nodes, np.float64)
    for name, p in seeds.items():
        seed_vec[local.node_index[normalize_name(name)]] += float(p)
    if local.num_nodes > k:
        from kgrag.methods.ultrag.seppr import induced_subgraph

        keep = seppr_nodes(local, seed_vec, k=k, alpha=alpha, steps=steps)
        local = induced_subgraph(local, keep)
    return local, {normalize_name(n): float(p) for n, p in seeds.items()}
