"""Triplet retrieval (paper §3.5, App. A): text-based scoring, graph reranker, agentic traversal.

* :class:`TripletScorer` -- App. A.1 "text-based retrieval": node and relation names are embedded
  once; a triplet scores ``cos(q,h) + cos(q,r) + cos(q,t)``. On a :class:`KnowledgeGraph` the
  score of **every edge** is one gather-and-add over the int32 edge arrays (no Python loop), and
  the top-k comes from ``argpartition``. On other stores (databases) the candidates are the
  ``L``-hop neighbourhood of the linked entities, embedded on the fly and memoised.
* :class:`GraphReranker` -- App. A.2 with a user-supplied cross-encoder: ``L = 2`` hop subgraph,
  top ``k_r = 20`` relations, top ``k_t = 100`` triplets, then the final top-k (optionally with a
  second, stronger reranker, as the paper's two-stage setup).
* :func:`agentic_traversal` -- Algorithm 1, as a generator of LLM requests (see :mod:`.steps`).
"""

from __future__ import annotations

import logging
import math
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable, Iterable, Sequence

import numpy as np

from kgrag.context.types import Triple
from kgrag.embed.relations import RelationTextVectors
from kgrag.embed.similarity import matvec
from kgrag.graph.base import IdIndexedGraph
from kgrag.llm.prompts import PromptSet
from kgrag.llm.steps import LLMRequest, Steps
from kgrag.methods.byokg.context import merge_triples
from kgrag.methods.byokg.parsing import parse_next_entities, parse_selected_relations
from kgrag.methods.byokg.prompts import PROMPTS, entity_selection_prompt, relation_selection_prompt
from kgrag.text.relations import relation_texts

if TYPE_CHECKING:  # pragma: no cover
    from kgrag.graph.base import GraphStore

DEFAULT_PROMPTS = PromptSet(PROMPTS, method="ByoKG-RAG")
log = logging.getLogger(__name__)

#: how far a database's float cosine of unit vectors may be from the client's float32 dot
#: product (both are within ~1e-6 of the real value)
DATABASE_SLACK = 1e-4
#: default :attr:`TripletScorer.database_typed_relations`
DATABASE_TYPED_RELATIONS = 8
#: at most this many relations are named when reading untyped pairs' relations; beyond, all
#: are read (FalkorDB: 3,000 pairs cost 35 ms for 1 named relation, 129 ms for 16, 224 ms
#: for all 200 of a 1M-edge graph)
MAX_NAMED_RELATIONS = 16
#: a vector counts as unit length within this
UNIT_TOLERANCE = 1e-3


class TripletScorer:
    """Scores triplets by ``cos(q,h) + cos(q,r) + cos(q,t)`` with precomputed name embeddings.

    Build with :meth:`from_graph` (embeds every node and relation name once; wrap the embedder
    in :class:`kgrag.embed.CachedEmbedder` -- or pass ``cache_dir`` -- to reuse the vectors
    across runs). ``node_vectors`` may also be handed in (e.g. those of a dense entity linker).

    A relation is embedded as the texts of :func:`kgrag.text.relations.relation_texts` (its
    labels, or its identifier in words, the last segment of a path-like id as well as the whole
    id); ``cos(q, r)`` is that of its best-matching text. ``relation_vectors`` is either a
    :class:`~kgrag.embed.relations.RelationTextVectors` or one row per relation.
    """

    def __init__(self, graph: GraphStore, embedder: Any, *, node_vectors: np.ndarray | None = None,
                 relation_vectors: np.ndarray | RelationTextVectors | None = None,
                 hops: int = 2, rank_in_database: bool = True) -> None:
        self.graph = graph
        #: on a database store with stored vectors, let the database rank the neighbourhood
        #: (:meth:`_top_k_in_database`) instead of fetching it; same results either way
        self.rank_in_database = rank_in_database
        #: node pairs per chunk and direction the database returns first (None: the larger
        #: of 64 and 8 per result asked)
        self.database_first_pairs: int | None = None
        #: relations closest to the question that the database reads by type (one typed read
        #: for all of them); 0 ranks every relation in the untyped pass (see
        #: :meth:`_database_candidates`)
        self.database_typed_relations: int = DATABASE_TYPED_RELATIONS
        self.embedder = embedder
        self.hops = hops
        self.node_vectors = node_vectors
        if relation_vectors is not None and not isinstance(relation_vectors, RelationTextVectors):
            rows = np.asarray(relation_vectors, np.float32)
            relation_vectors = RelationTextVectors(rows, np.arange(len(rows) + 1))
        self.relation_vectors: RelationTextVectors | None = relation_vectors
        self._memo: dict[str, np.ndarray] = {}
        #: set when the backend refused the database ranking (then the client scores)
        self._database_scoring_failed = False
        if isinstance(graph, IdIndexedGraph):
            if node_vectors is None or relation_vectors is None:
                raise ValueError("use TripletScorer.from_graph to embed the graph's names")
            if (node_vectors.shape[0] != graph.num_nodes
                    or len(relation_vectors) != graph.num_relations):
                raise ValueError("node/relation vectors do not match the graph's name tables")

    @classmethod
    def from_graph(cls, graph: GraphStore, embedder: Any, *, cache_dir: Any = None,
                   node_vectors: np.ndarray | None = None, hops: int = 2) -> "TripletScorer":
        if cache_dir is not None:
            from kgrag.embed import CachedEmbedder

            embedder = CachedEmbedder(embedder, cache_dir)
        if not isinstance(graph, IdIndexedGraph):
            return cls(graph, embedder, hops=hops)
        from kgrag.embed.graph_vectors import graph_name_vectors

        if node_vectors is None:  # shared with every other method over this graph and embedder
            node_vectors = graph_name_vectors(graph, embedder, "nodes")
        relation_vectors = RelationTextVectors.from_graph(graph, embedder)
        return cls(graph, embedder, node_vectors=node_vectors, relation_vectors=relation_vectors,
                   hops=hops)

    # ------------------------------------------------------------------ scoring
    def query_vector(self, question: str) -> np.ndarray:
        return np.asarray(self.embedder.embed_query(question), np.float32)

    def _in_memory(self) -> tuple[IdIndexedGraph, np.ndarray]:
        """The in-memory graph and its node vectors (both set together, see ``__init__``)."""
        if not isinstance(self.graph, IdIndexedGraph) or self.node_vectors is None:
            raise TypeError("edge-id scoring needs an in-memory KnowledgeGraph with its node "
                            "vectors (TripletScorer.from_graph)")
        return self.graph, self.node_vectors

    def edge_scores(self, qvec: np.ndarray, edge_ids: np.ndarray | None = None) -> np.ndarray:
        """Scores of ``edge_ids`` (all edges when ``None``) on a :class:`KnowledgeGraph`."""
        kg, node_vectors = self._in_memory()
        node_sim = matvec(node_vectors, qvec)
        rel_sim = self.relation_similarities(qvec)
        if edge_ids is None:
            return node_sim[kg.heads] + rel_sim[kg.rels] + node_sim[kg.tails]
        return (node_sim[kg.heads[edge_ids]] + rel_sim[kg.rels[edge_ids]]
                + node_sim[kg.tails[edge_ids]])

    def _vectors(self, names: Sequence[str], nodes: bool = False) -> np.ndarray:
        """Vectors of ``names`` (memoised). ``nodes``: they are node names of a database store,
        so the vectors ``kgrag index-db`` stored with this embedder's model are fetched by name
        (batched) instead of embedding them here (warned once when there are none)."""
        missing = [n for n in dict.fromkeys(names) if n not in self._memo]
        if missing and nodes:
            from kgrag.graph.cypher.vectors import fetch_node_vectors, stored_vectors_for

            stored = stored_vectors_for(self.graph, self.embedder, "ByoKG-RAG triplet scoring",
                                        "every node name of a scored triple is embedded in "
                                        "the client (once per name and process)")
            if stored is not None:
                fetched = fetch_node_vectors(self.graph, missing, stored.info.property)
                self._memo.update(fetched)
                missing = [n for n in missing if n not in fetched]
        if missing:
            for name, vec in zip(missing, np.asarray(self.embedder.embed_documents(missing))):
                self._memo[name] = vec.astype(np.float32)
        return np.stack([self._memo[n] for n in names]) if names else np.zeros((0, 1), np.float32)

    def relation_similarities(self, qvec: np.ndarray) -> np.ndarray:
        """``cos(q, r)`` of every relation of the in-memory graph (best text per relation)."""
        if self.relation_vectors is None:
            raise ValueError("relation vectors exist only for an in-memory graph")
        return self.relation_vectors.similarities(qvec)

    def relation_similarities_for(self, names: Sequence[str], qvec: np.ndarray) -> np.ndarray:
        """``cos(q, r)`` of the named relations (texts embedded on demand and memoised)."""
        if not names:
            return np.zeros(0, np.float32)
        # per distinct relation (a hub's neighbourhood repeats a few hundred names 100k times)
        unique = list(dict.fromkeys(names))
        groups = [relation_texts(self.graph, n) for n in unique]
        vectors = self._vectors([t for g in groups for t in g])
        indptr = np.zeros(len(groups) + 1, np.int64)
        np.cumsum([len(g) for g in groups], out=indptr[1:])
        sims = RelationTextVectors(vectors, indptr).similarities(qvec)
        position = {n: i for i, n in enumerate(unique)}
        return sims[np.fromiter((position[n] for n in names), np.int64, len(names))]

    def score_triples(self, qvec: np.ndarray, triples: Sequence[Triple]) -> np.ndarray:
        """Scores of arbitrary triples (names embedded on demand and memoised)."""
        if not triples:
            return np.zeros(0, np.float32)
        if isinstance(self.graph, IdIndexedGraph):
            kg, node_vectors = self._in_memory()
            h = np.fromiter((kg.node_index[t.head] for t in triples), np.int64, len(triples))
            r = np.fromiter((kg.relation_index[t.relation] for t in triples), np.int64,
                            len(triples))
            tl = np.fromiter((kg.node_index[t.tail] for t in triples), np.int64, len(triples))
            return (node_vectors[h] @ qvec + self.relation_similarities(qvec)[r]
                    + node_vectors[tl] @ qvec)
        # one dot product per row (einsum's own loop), so a triple's score does not depend on
        # which other triples are scored with it (a BLAS product's rounding can)
        heads = np.einsum("ij,j->i", self._vectors([t.head for t in triples], nodes=True), qvec)
        rels = self.relation_similarities_for([t.relation for t in triples], qvec)
        tails = np.einsum("ij,j->i", self._vectors([t.tail for t in triples], nodes=True), qvec)
        return heads + rels + tails

    def top_k(self, question: str | np.ndarray, k: int = 10,
              seeds: Iterable[str] = ()) -> list[Triple]:
        """The ``k`` best triplets, best first, each with its score.

        On a :class:`KnowledgeGraph` all edges compete (``seeds`` is ignored); on another store
        the candidates are the ``hops``-hop neighbourhood of ``seeds``.
        """
        if k <= 0:
            return []
        qvec = self.query_vector(question) if isinstance(question, str) else question
        if isinstance(self.graph, IdIndexedGraph):
            scores = self.edge_scores(qvec)
            k = min(k, len(scores))
            if k == 0:
                return []
            top = np.argpartition(-scores, k - 1)[:k]
            top = top[np.lexsort((top, -scores[top]))]
            triples = self.graph.edge_triples(top)
            return [Triple(t.head, t.relation, t.tail, float(s))
                    for t, s in zip(triples, scores[top])]
        seeds = list(seeds)
        if not seeds:
            return []
        found = self._top_k_in_database(qvec, seeds, k)
        if found is not None:
            return found
        candidates = self.graph.k_hop_subgraph(seeds, hops=self.hops)
        return rank_triples(candidates, self.score_triples(qvec, candidates), k)

    def _top_k_in_database(self, qvec: np.ndarray, seeds: list[str], k: int
                           ) -> list[Triple] | None:
        """:meth:`top_k` with the database ranking the neighbourhood (None: not possible here).

        The neighbourhood of a hub seed is most of a power-law graph (258k triples around one
        seed of a 1M-edge graph: 108 s to fetch and score in the client). Instead the database
        scores its *node pairs* by ``cos(q, h) + cos(q, t)`` over the stored vectors
        (:meth:`~kgrag.graph.cypher.store.CypherGraphStore.best_pairs`; pairs, because naming
        each edge is what is slow) and only the best pairs leave it:

        1. the best ``max(64, 8 k)`` triples per direction of the
           :attr:`database_typed_relations` relations closest to the question, read by type
           and estimated in the database as pair score + ``cos(q, r)``, so ``lower`` = the
           k-th estimate minus :data:`DATABASE_SLACK` (the database's float rounding) is at
           most the final k-th score;
        2. every pair of any relation scoring at least ``lower - DATABASE_SLACK - cos(q, r')``,
           ``r'`` the best relation without a typed read (its relations read), and the typed
           triples estimated at least ``lower - DATABASE_SLACK`` where the first read did not
           reach that (any other triple scores below ``lower``);
           :meth:`_database_candidates` has the details;
        3. the triples whose estimate is within ``2 x DATABASE_SLACK`` of the k-th estimate
           are scored exactly as :meth:`score_triples` does (their vectors fetched) and ranked
           as :func:`rank_triples` ranks the whole neighbourhood.

        So the result is the client computation's, scores, ties and order included. Needs
        stored vectors of this embedder's model on every node of the neighbourhood, unit-length
        question and stored vectors (then the database's cosine is the client's dot product)
        and a backend with vector functions; otherwise None, and :meth:`top_k` fetches the
        neighbourhood (a warning says so once). A pair lacking a vector is found by the first
        pass itself: the database ranks it first (NaN score), so no separate scan checks.
        """
        from kgrag.errors import GraphDatabaseError
        from kgrag.graph.base import is_cypher_store
        from kgrag.graph.cypher.vectors import stored_vectors_for

        store: Any = self.graph
        if (not self.rank_in_database or not is_cypher_store(self.graph)
                or not hasattr(store, "best_pairs") or self._database_scoring_failed
                or abs(float(np.linalg.norm(qvec)) - 1.0) > UNIT_TOLERANCE):
            return None
        stored = stored_vectors_for(store, self.embedder, "ByoKG-RAG triplet scoring",
                                    "every node name of a scored triple is embedded in "
                                    "the client (once per name and process)")
        if stored is None:
            return None
        prop = stored.info.property
        try:
            frontier = store.existing_nodes(seeds)
            level = frontier
            for _ in range(self.hops - 1):  # the nodes whose edges the BFS reads
                level = sorted(set(store.neighbour_names(level)) - set(frontier))
                frontier = sorted(set(frontier) | set(level))
            if not frontier:
                return []
            found = self._database_candidates(store, frontier, qvec, prop, k)
            if found is None:
                return None
            keys = sorted(found)  # name order, as the fetched neighbourhood's
            candidates = [Triple(*key) for key in keys]
            estimates = np.fromiter((found[key] for key in keys), np.float64, len(keys))
        except GraphDatabaseError as exc:
            self._database_scoring_failed = True
            log.warning("%r: ranking triples in the database failed (%s); fetching the "
                        "neighbourhood into the client instead", store, exc)
            return None
        if len(estimates) > k:  # only triples that can reach the k-th are scored exactly
            keep = estimates >= _kth_largest(estimates, k) - 2 * DATABASE_SLACK
            candidates = [t for t, kept in zip(candidates, keep.tolist()) if kept]
        scores = self.score_triples(qvec, candidates)
        if not self._unit_vectors([t.head for t in candidates] + [t.tail for t in candidates]):
            return None
        return rank_triples(candidates, scores, k)

    def _database_candidates(self, store: Any, frontier: list[str], qvec: np.ndarray,
                             prop: str, k: int) -> dict[tuple[str, str, str], float] | None:
        """Every neighbourhood triple that can reach the k-th score, and more, each with its
        estimate (database pair score + ``cos(q, r)``); None if a pair lacks a vector.

        Relations are split by their similarity to the question. The
        :attr:`database_typed_relations` closest ones are read by their type
        (:meth:`~kgrag.graph.cypher.store.CypherGraphStore.best_triples`: their edges only,
        the relation named among those few, the estimate computed in the database; none where
        relations are an edge property, since such a pass would read every edge). The rest
        share one untyped pass whose threshold subtracts only the best *remaining* relation
        similarity -- so the question's own relations, which lower the threshold most, never
        make the untyped pass return thousands of pairs whose relations must then be named.
        Steps: (1) the best typed triples give the k-th estimate ``lower`` (with the best
        pairs of any relation when they are fewer than k); (2) every untyped pair scoring at
        least ``lower - slack - best remaining cos(q, r)``, and every typed triple estimated
        at least ``lower - slack`` when the first typed pass did not reach that far. A pair
        lacking a vector scores NaN and comes first in any pass.
        """
        limit = self.database_first_pairs or max(64, 8 * k)
        relations = store.list_relations()
        sims = np.asarray(self.relation_similarities_for(relations, qvec), np.float64)
        by_similarity = np.argsort(-sims, kind="stable")
        # relations kept in an edge property: a "typed" pass would read every edge again
        cut = max(0, self.database_typed_relations) if store.relations_are_types else 0
        typed = {relations[i]: float(sims[i]) for i in by_similarity[:cut].tolist()}
        rest_names = [relations[i] for i in by_similarity[cut:].tolist()]
        rest = sims[by_similarity[cut:]]  # the untyped relations' similarities, best first
        found: dict[tuple[str, str, str], float] = {}

        def add_typed(triples: Sequence[tuple[str, str, str, float]]) -> bool:
            if _lacks_vectors(triples):
                return False
            found.update(((h, r, t), score) for h, r, t, score in triples)
            return True

        def add_pairs(pairs: Sequence[tuple[str, str, float]], lower: float = -np.inf) -> bool:
            if _lacks_vectors(pairs):
                return False
            groups = _pairs_by_relations(pairs, rest_names, rest, lower)
            triples, estimates = self._estimated_triples(store, groups, qvec)
            found.update(zip((t.as_tuple() for t in triples), estimates.tolist()))
            return True

        typed_bound = untyped_bound = np.inf  # no first pass: nothing known of what is left
        if typed:
            triples, typed_bound = store.best_triples(frontier, qvec, prop, typed, limit=limit)
            if not add_typed(triples):
                return None
        if len(found) < k and len(rest):  # the typed relations are rare here
            pairs, untyped_bound = store.best_pairs(frontier, qvec, prop, limit=limit)
            if not add_pairs(pairs):
                return None
            if untyped_bound is None:  # that pass returned every pair: every triple is known
                return found
        estimates = np.fromiter(found.values(), np.float64, len(found))
        lower = _kth_largest(estimates, k) - DATABASE_SLACK if len(found) >= k else -np.inf
        if len(rest):
            threshold = lower - DATABASE_SLACK - float(rest[0])
            if untyped_bound >= threshold:  # pairs left that can still reach lower
                pairs, _ = store.best_pairs(frontier, qvec, prop, threshold=(
                    threshold if np.isfinite(threshold) else None))
                if not add_pairs(pairs, lower):
                    return None
        if typed and typed_bound is not None and typed_bound >= lower - DATABASE_SLACK:
            threshold = lower - DATABASE_SLACK
            triples, _ = store.best_triples(frontier, qvec, prop, typed, threshold=(
                threshold if np.isfinite(threshold) else None))
            if not add_typed(triples):
                return None
        return found

    def _estimated_triples(
            self, store: Any,
            groups: Sequence[tuple[Sequence[str] | None, Sequence[tuple[str, str, float]]]],
            qvec: np.ndarray) -> tuple[list[Triple], np.ndarray]:
        """The triples of each group's pairs (of the group's relations; None: any) sorted by
        name, each estimated as its pair's database score plus ``cos(q, r)``."""
        pair_score = {(h, t): s for _, pairs in groups for h, t, s in pairs}
        triples = [Triple(h, r, t) for h, r, t in store.grouped_pair_relations(
            [(relations, [(h, t) for h, t, _ in pairs]) for relations, pairs in groups])]
        rel = self.relation_similarities_for([t.relation for t in triples], qvec)
        node = np.fromiter((pair_score[(t.head, t.tail)] for t in triples), np.float64,
                           len(triples))
        return triples, node + rel

    def _unit_vectors(self, names: Sequence[str]) -> bool:
        """Whether the memoised vectors of ``names`` all have unit length."""
        if not names:
            return True
        norms = np.linalg.norm(np.stack([self._memo[n] for n in dict.fromkeys(names)]), axis=1)
        return bool(np.all(np.abs(norms - 1.0) <= UNIT_TOLERANCE))


def _pairs_by_relations(pairs: Sequence[tuple[str, str, float]], names: Sequence[str],
                        similarities: np.ndarray, lower: float
                        ) -> list[tuple[Sequence[str] | None, list[tuple[str, str, float]]]]:
    """Untyped pairs grouped by the relations worth reading for them (None: every relation).

    ``names`` are the relations without a typed pass, best first (``similarities``, falling).
    A triple whose estimate (pair score + ``cos(q, r)``) is below ``lower - 2 x slack`` cannot
    be kept (every kept one is within 2 slacks of a k-th estimate of at least ``lower +
    slack``), so a pair needs only the relations with ``cos(q, r) >= lower - 2 slack - score``,
    a prefix of ``names``; a pair that no relation lifts that far is dropped. Prefix lengths
    are rounded up to a power of four (at most four groups, read in one round trip by
    :meth:`~kgrag.graph.cypher.store.CypherGraphStore.grouped_pair_relations`); beyond
    :data:`MAX_NAMED_RELATIONS` every relation is read (then one untyped lookup is cheaper).
    Without a finite ``lower``: one group, every relation.
    """
    if not pairs:
        return []
    if not np.isfinite(lower):
        return [(None, list(pairs))]
    need = lower - 2 * DATABASE_SLACK - np.fromiter((s for _, _, s in pairs), np.float64,
                                                    len(pairs))
    counts = np.searchsorted(-np.asarray(similarities, np.float64), -need, side="right")
    groups: dict[int | None, list[tuple[str, str, float]]] = {}
    for pair, count in zip(pairs, counts.tolist()):
        if not count:  # no relation lifts this pair to lower
            continue
        size = 1
        while size < count:
            size *= 4
        key = size if size <= MAX_NAMED_RELATIONS and size < len(names) else None
        groups.setdefault(key, []).append(pair)
    return [(None if key is None else names[:key], group) for key, group in groups.items()]


def _lacks_vectors(rows: Sequence[tuple[Any, ...]]) -> bool:
    """Whether a database pass returned a pair or triple (score last) with an end lacking a
    stored vector (NaN)."""
    return any(math.isnan(row[-1]) for row in rows)


def _kth_largest(values: np.ndarray, k: int) -> float:
    """The ``k``-th largest of ``values`` (1-based; ``len(values) >= k``)."""
    return float(-np.partition(-values, k - 1)[k - 1])


def rank_triples(triples: Sequence[Triple], scores: np.ndarray, k: int | None) -> list[Triple]:
    """Triples sorted by descending score (stable), cut to ``k``, scores attached."""
    order = np.argsort(-np.asarray(scores, dtype=np.float64), kind="stable")
    if k is not None:
        order = order[:k]
    return [Triple(triples[i].head, triples[i].relation, triples[i].tail, float(scores[i]))
            for i in order.tolist()]


# ---------------------------------------------------------------------- graph reranker (A.2)
def rerank_scores(model: Any, query: str, texts: Sequence[str]) -> np.ndarray:
    """Relevance scores from a cross-encoder: ``model.predict(pairs)`` (sentence-transformers
    ``CrossEncoder``), ``model.score(query, texts)``, or a callable ``(query, texts) -> scores``."""
    if not texts:
        return np.zeros(0, np.float32)
    if hasattr(model, "predict"):
        raw = model.predict([(query, t) for t in texts])
    elif hasattr(model, "score"):
        raw = model.score(query, list(texts))
    elif callable(model):
        raw = model(query, list(texts))
    else:
        raise TypeError("a reranker needs .predict(pairs), .score(query, texts) or be callable")
    scores = np.asarray(raw, dtype=np.float32).reshape(-1)
    if scores.shape[0] != len(texts):
        raise ValueError(f"reranker returned {scores.shape[0]} scores for {len(texts)} texts")
    return scores


@dataclass
class GraphReranker:
    """App. A.2: rerank the L-hop neighbourhood of linked entities with cross-encoders."""

    graph: GraphStore
    reranker: Any
    final_reranker: Any = None
    hops: int = 2
    relation_top_k: int = 20
    triplet_top_k: int = 100
    max_candidates: int = 100_000

    def retrieve(self, question: str, seeds: Iterable[str], k: int = 10) -> list[Triple]:
        seeds = list(seeds)
        if not seeds or k <= 0:
            return []
        candidates = self.graph.k_hop_subgraph(seeds, hops=self.hops, max_edges=self.max_candidates)
        relations = list(dict.fromkeys(t.relation for t in candidates))
        if len(relations) > self.relation_top_k:
            kept = rank_names(relations, rerank_scores(self.reranker, question, relations),
                              self.relation_top_k)
            candidates = [t for t in candidates if t.relation in kept]
        texts = [t.verbalize() for t in candidates]
        stage1 = rank_triples(candidates, rerank_scores(self.reranker, question, texts),
                              self.triplet_top_k)
        final_model = self.final_reranker or self.reranker
        if final_model is self.reranker:
            return stage1[:k]
        return rank_triples(stage1, rerank_scores(final_model, question,
                                                  [t.verbalize() for t in stage1]), k)


def rank_names(names: Sequence[str], scores: np.ndarray, k: int) -> set[str]:
    order = np.argsort(-scores, kind="stable")[:k]
    return {names[i] for i in order.tolist()}


# ---------------------------------------------------------------------- agentic (Algorithm 1)
@dataclass
class AgenticTrace:
    """What Algorithm 1 found: the accumulated triplets and a log of each hop."""

    triples: list[Triple] = field(default_factory=list)
    hops: list[dict[str, Any]] = field(default_factory=list)
    stop_reason: str = ""


def _template(prompts: Any, name: str) -> str:
    """The template ``name`` of a :class:`~kgrag.llm.prompts.PromptSet` (defaults without)."""
    return (prompts if prompts is not None else DEFAULT_PROMPTS).template(name)


def agentic_traversal(
    question: str,
    seeds: Sequence[str],
    graph: GraphStore,
    *,
    hops: int = 3,
    resolve_entities: Callable[[list[str], list[Triple]], list[str]],
    initial: Sequence[Triple] = (),
    max_relations: int = 200,
    max_triplets_per_hop: int = 200,
    max_entities_per_hop: int = 10,
    rank: Callable[[Sequence[Triple]], np.ndarray] | None = None,
    prompts: Any = None,
) -> Steps[AgenticTrace]:
    """Algorithm 1 (agentic retrieval) as a generator of LLM requests.

    Per hop: one-hop triplets of the current entities (both directions, so reversed facts are
    reachable), **one** relation-selection call for all current entities (the reference code
    batches them too; per-entity calls would multiply cost), a filter to the selected
    relations, then one entity-selection call over everything found so far. Stops when the LLM
    answers FINISH or selects nothing new, when a hop has no triplets, or after ``hops`` hops.

    Decisions the paper leaves open: the entities the LLM picks are mapped back to graph nodes by
    ``resolve_entities`` (exact names first, then linking) rather than used verbatim; entities
    already explored are not expanded again; at most ``max_entities_per_hop`` are expanded and
    ``max_triplets_per_hop`` kept per hop (ranked by ``rank`` when given, e.g. the text scorer,
    else in graph order) -- the paper prunes nothing, but a hub node must not flood the prompt.
    """
    trace = AgenticTrace(triples=list(initial))
    seen = {t.as_tuple() for t in trace.triples}
    explored: set[str] = set()
    current = [s for s in dict.fromkeys(seeds)][:max(max_entities_per_hop, len(seeds))]
    for hop in range(1, hops + 1):
        current = [e for e in current if e not in explored]
        if not current:
            trace.stop_reason = "no new entities"
            break
        explored.update(current)
        candidates = graph.one_hop(current, direction="both")
        if not candidates:
            trace.hops.append({"hop": hop, "entities": current, "relations": [], "selected": []})
            trace.stop_reason = "no triplets around the current entities"
            break
        relations = sorted({t.relation for t in candidates})[:max_relations]
        reply = yield LLMRequest(
            relation_selection_prompt(question, current, relations,
                                      template=_template(prompts, "relation_selection")),
            step="select_relations")
        selected = parse_selected_relations(reply, relations)
        chosen = set(selected)
        new = [t for t in candidates if t.relation in chosen and t.as_tuple() not in seen]
        if len(new) > max_triplets_per_hop:
            if rank is not None:
                order = np.argsort(-np.asarray(rank(new)), kind="stable")[:max_triplets_per_hop]
                new = [new[i] for i in sorted(order.tolist())]
            else:
                new = new[:max_triplets_per_hop]
        for t in new:
            seen.add(t.as_tuple())
        trace.triples.extend(new)
        log = {"hop": hop, "entities": current, "relations": relations, "selected": selected,
               "new_triples": len(new)}
        trace.hops.append(log)
        if not selected:
            trace.stop_reason = "no relation selected"
            break
        context = "\n".join(merge_triples(trace.triples))
        reply = yield LLMRequest(
            entity_selection_prompt(question, context,
                                    template=_template(prompts, "entity_selection")),
            step="select_entities")
        picked, finish = parse_next_entities(reply)
        log["next"] = picked
        if finish:
            trace.stop_reason = "FINISH"
            break
        current = resolve_entities(picked, trace.triples)[:max_entities_per_hop]
        if not current:
            trace.stop_reason = "no entity selected"
            break
    else:
        trace.stop_reason = trace.stop_reason or f"reached {hops} hops"
    return trace
