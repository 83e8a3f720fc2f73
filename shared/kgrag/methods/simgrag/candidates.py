"""Candidate generation for SimGRAG: nearest graph nodes / relations / types per pattern item.

Three vector collections, as in the paper: node names, relation names and (optionally) entity
type names, each searched with the **L2 metric** (the paper's Milvus setting). Distances are
true Euclidean distances (the square root of squared L2), so GSD is the paper's unweighted sum
of L2 distances whatever the embedder's normalisation.

* ``index="flat"`` -- exact search (the reference), the default below ``hnsw_threshold``
  items: one float32 scan of the stored matrix for all of a pattern's query vectors
  (:class:`kgrag.embed.exact_l2.FlatL2Search`: floating-point error bounds give a band of
  about k rows, which is re-scored exactly and sorted; ties broken by id).
* ``index="int8"`` -- the same exact answer from a scan of an int8 copy, a quarter of the
  bytes (:class:`kgrag.embed.exact_l2.Int8L2Search`: per-row scales, residual norms and
  Cauchy-Schwarz give each row an interval; the rows whose interval can reach the k-th best
  are re-scored in float32). Needs numba (the ``fast`` extra); measured on 2.5M x 384 names
  at k = 16384 in docs/simgrag.md.
* ``index="auto"`` -- from ``hnsw_threshold`` names on: HNSW when k(n) is at most
  ``AUTO_HNSW_MAX_K``, else the exact int8 scan (flat when numba is missing); exact flat below.
* ``index="hnsw"`` -- ``IndexHNSWFlat`` (M = ``hnsw_m``, efConstruction = ``ef_construction``),
  searched with efSearch = ``ef_search_factor`` × k as in the paper (8 × k(n) / 8 × k(r)).
  Approximate: the search downstream is exact only relative to these candidates.

Texts embedded: node names as stored; relations as the texts of
:func:`kgrag.text.relations.relation_texts` (labels, or the identifier in words: ``directed_by`` ->
"directed by", ``people.person.place_of_birth`` -> "place of birth" and "people person place of
birth"), the nearest of a relation's texts giving its distance, since the pattern's relations are
written in plain words; ``humanize_relations=False`` embeds the raw names instead. An ``UNKNOWN``
item gets no vector search: it is a wildcard (every item at distance 0). Entity types
(``node_types``: type name -> entity names) give candidates to the unknown nodes of a pattern
component that names no entity (the reference code's rule): the placeholder's label without
``UNKNOWN`` and its number (``"UNKNOWN person 1"`` -> "person") is matched to the ``k_types``
nearest types, and every entity of those types becomes a candidate at distance 0. """

from __future__ import annotations

import re
import time
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import numpy as np

from kgrag.embed.exact_l2 import sample_rank
from kgrag.embed.relations import RelationTextVectors
from kgrag.embed.vector_index import AUTO_HNSW_MAX_K, INDEX_KINDS, VectorIndex
from kgrag.methods.simgrag.pattern import Pattern, is_unknown
from kgrag.methods.simgrag.search import CandidateSet
from kgrag.text.names import relation_words

DEFAULT_HNSW_THRESHOLD = 1_000_000
#: the node vector index kinds :class:`NameIndex` builds (``INDEX_KINDS``) and the k above
#: which ``index="auto"`` stays exact (``AUTO_HNSW_MAX_K``): :mod:`kgrag.embed.vector_index`
__all__ = ["AUTO_HNSW_MAX_K", "DEFAULT_HNSW_THRESHOLD", "INDEX_KINDS", "CandidateGenerator",
           "NameIndex", "auto_k_relations", "humanize_relation", "placeholder_label",
           "smallest_k"]


#: ``k_relations="auto"`` takes every relation up to this many (the paper's k(r) on DBpedia).
AUTO_K_RELATIONS_CAP = 512


def auto_k_relations(num_relations: int) -> int:
    """k(r) for a graph with ``num_relations`` relations: all of them up to
    :data:`AUTO_K_RELATIONS_CAP`, the cap beyond.

    The relation vectors are few, so scanning them all costs nothing; what k(r) decides is
    whether the relation a pattern means is a candidate at all. A fixed 16 is all relations on
    MetaQA (9) but on a Freebase-style schema it drops the right one whenever relations sharing
    a domain word crowd it out (PathQuestion-L, 363 relations: docs/results.md, "Relation
    wording"). The GSD ranking still prefers near relations, so more candidates cost only search
    time.

    >>> auto_k_relations(9), auto_k_relations(363), auto_k_relations(5000)
    (9, 363, 512)
    """
    return max(1, min(int(num_relations), AUTO_K_RELATIONS_CAP))


def humanize_relation(name: str) -> str:
    """``directed_by`` / ``placeOfBirth`` / ``film.director`` -> plain lower-case words
    (:func:`kgrag.text.names.relation_words`)."""
    return relation_words(name)


def placeholder_label(text: str) -> str:
    """``"UNKNOWN person 1"`` -> ``"person"`` (the words an entity type is matched against)."""
    label = re.sub(r"^UNKNOWN\b", "", text.strip())
    label = re.sub(r"\s+\d+\s*$", "", label).strip()
    return label or text


def smallest_k(values: np.ndarray, k: int, *, sample: int = 32768) -> np.ndarray:
    """Positions of the ``k`` smallest ``values``, ascending by (value, position) -- exact.

    A threshold is estimated from an evenly strided sample (a little above the sample's
    expected k-th value), every value at or below it is kept and only those are sorted. If
    fewer than ``k`` values pass (an unlucky sample or adversarial ordering), the whole array
    is partitioned instead, so the answer never depends on the sample. Ties at the k-th value
    are broken by position, so the selection is deterministic.
    """
    n = len(values)
    k = min(int(k), n)
    if k <= 0:
        return np.empty(0, dtype=np.int64)
    kept = None
    step = n // sample
    if step >= 4 and k < n // 2:
        probe = values[::step]
        expected = k * len(probe) / n
        rank = min(len(probe) - 1, sample_rank(expected))
        kept = np.flatnonzero(values <= np.partition(probe, rank)[rank])
        if len(kept) < k:  # the sample misled: fall back to the exact k-th value
            kept = None
    if kept is None:  # every value up to the k-th smallest, ties included
        kept = np.flatnonzero(values <= np.partition(values, k - 1)[k - 1])
    order = np.lexsort((kept, values[kept]))[:k]
    return kept[order].astype(np.int64)


class NameIndex:
    """L2 nearest names over embeddings; :meth:`search` gives :class:`CandidateSet` per query.

    A :class:`~kgrag.embed.vector_index.VectorIndex` with the L2 metric: ``index="flat"`` keeps
    the float32 matrix itself (no copy when given one) and searches it exactly;
    ``index="int8"`` adds an int8 copy and returns the same exact answer from a quarter of the
    bytes; ``index="hnsw"`` builds a FAISS ``IndexHNSWFlat`` searched with efSearch =
    ``ef_search_factor`` x k; ``index="auto"`` picks from ``hnsw_threshold`` vectors on HNSW
    when ``expected_k`` (the k searches will ask for) is at most ``AUTO_HNSW_MAX_K`` and int8
    when it is larger.
    """

    def __init__(self, vectors: np.ndarray, *, index: str = "auto",
                 hnsw_threshold: int = DEFAULT_HNSW_THRESHOLD, hnsw_m: int = 32,
                 ef_construction: int = 200, ef_search_factor: int = 8,
                 expected_k: int | None = None) -> None:
        self.vector_index = VectorIndex.build(
            vectors, metric="l2", index=index, hnsw_threshold=hnsw_threshold, hnsw_m=hnsw_m,
            ef_construction=ef_construction, ef_search_factor=ef_search_factor,
            expected_k=expected_k, desc="HNSW index (SimGRAG names)")

    @property
    def kind(self) -> str:
        """What ``index`` resolved to: ``"flat"``, ``"int8"`` or ``"hnsw"``."""
        return self.vector_index.kind

    @property
    def exact(self) -> Any:
        """The exact scan (:mod:`kgrag.embed.exact_l2`) of a flat / int8 index, else None."""
        return self.vector_index.exact

    def __len__(self) -> int:
        return len(self.vector_index)

    def search(self, queries: np.ndarray, k: int) -> list[CandidateSet]:
        """The ``k`` nearest items of each query row (fewer when the index is smaller)."""
        queries = np.ascontiguousarray(np.atleast_2d(queries), dtype=np.float32)
        if len(queries) == 0 or len(self) == 0:
            return [CandidateSet(np.empty(0, np.int64), np.empty(0)) for _ in range(len(queries))]
        # exact kinds: every query vector in one pass over the rows; identical vectors at 0
        squared, ids = self.vector_index.search(queries, k)
        out = []
        for row_d, row_i in zip(squared, ids):
            ok = row_i >= 0
            # the root in float64: distinct squared distances keep distinct roots (float32
            # roots of neighbouring float32 values often coincide)
            dist = np.sqrt(np.maximum(row_d[ok], 0.0, dtype=np.float32).astype(np.float64))
            if self.kind == "hnsw":  # approximate: order and uniqueness are checked
                out.append(CandidateSet(row_i[ok].astype(np.int64), dist))
            else:  # exact: distinct ids, ascending by (squared distance, id)
                out.append(_exact_candidates(row_i.astype(np.int64), dist))
        return out


def _exact_candidates(ids: np.ndarray, dist: np.ndarray) -> CandidateSet:
    """An exact search's answer as a :class:`CandidateSet`, skipping its re-check and re-sort
    (a few ms per 16k set) when the order by (squared distance, id) is, as it should be, the
    order by (distance, id); otherwise the validating constructor sorts it."""
    same = dist[1:] == dist[:-1]
    if np.all((dist[1:] > dist[:-1]) | (same & (ids[1:] > ids[:-1]))):
        return CandidateSet.presorted(ids, dist)
    return CandidateSet(ids, dist)


class CandidateGenerator:
    """Builds the node / relation (/ type) indexes of a graph and the candidates of a pattern.

    ``node_names`` and ``relation_names`` are the graph's name tables (ids are positions).
    ``k_nodes`` / ``k_relations`` / ``k_types`` are the paper's k(n), k(r), k(t);
    ``k_relations="auto"`` is :func:`auto_k_relations` of the number of relations.
    ``relation_texts``: per relation, the texts embedded for it (default: the identifier in
    words, :func:`~kgrag.text.relations.relation_texts_for`); a relation's distance to a
    pattern relation is that of its nearest text.
    """

    def __init__(self, node_names: Sequence[str], relation_names: Sequence[str], embedder: Any, *,
                 k_nodes: int = 16, k_relations: int | str = "auto", k_types: int = 16,
                 node_types: Mapping[str, Iterable[str]] | None = None,
                 humanize_relations: bool = True, node_vectors: np.ndarray | None = None,
                 relation_texts: Sequence[Sequence[str]] | None = None,
                 node_search: Any = None, **index_options: Any) -> None:
        if k_relations == "auto":
            k_relations = auto_k_relations(len(relation_names))
        elif isinstance(k_relations, str):
            raise ValueError("k_relations must be a positive integer or 'auto'")
        for name, value in (("k_nodes", k_nodes), ("k_relations", k_relations),
                            ("k_types", k_types)):
            if int(value) < 1:
                raise ValueError(f"{name} must be at least 1")
        self.embedder = embedder
        self.k_nodes, self.k_relations, self.k_types = int(k_nodes), int(k_relations), int(k_types)
        self.humanize_relations = humanize_relations
        self.node_names = node_names
        self.relation_names = list(relation_names)
        self.node_index: Any
        if node_search is not None:  # a database's vector index (db_candidates): no vectors here
            self.node_index = node_search
        else:
            if node_vectors is None:
                node_vectors = embedder.embed_documents(list(node_names))
            if len(node_vectors) != len(node_names):
                raise ValueError("node_vectors must have one row per node")
            self.node_index = NameIndex(node_vectors, expected_k=self.k_nodes, **index_options)
        if not humanize_relations:
            texts: Sequence[Sequence[str]] = [[r] for r in self.relation_names]
        elif relation_texts is not None:
            texts = relation_texts
        else:
            from kgrag.text.relations import relation_texts_for

            texts = [relation_texts_for(r) for r in self.relation_names]
        if len(texts) != len(self.relation_names):
            raise ValueError("relation_texts must have one entry per relation")
        self.relation_vectors = RelationTextVectors.from_texts(texts, embedder)
        self.type_members: list[np.ndarray] = []
        self.type_names: list[str] = []
        self.type_index: NameIndex | None = None
        if node_types:
            grows = getattr(node_names, "ids_of", None)  # a database's growing name table
            index_of = {} if grows else {n: i for i, n in enumerate(node_names)}
            for type_name, members in node_types.items():
                ids = (sorted(set(grows(members))) if grows else
                       sorted({index_of[m] for m in members if m in index_of}))
                if ids:
                    self.type_names.append(str(type_name))
                    self.type_members.append(np.asarray(ids, dtype=np.int64))
            if self.type_names:
                self.type_index = NameIndex(embedder.embed_documents(self.type_names), index="flat")

    def candidates(self, pattern: Pattern) -> tuple[list[CandidateSet | None],
                                                     list[CandidateSet | None], dict[str, Any]]:
        """``(node candidate sets, relation candidate sets, info)`` for ``pattern``.

        ``None`` marks a wildcard. ``info`` holds the vector-search time and, per pattern item,
        its nearest names (for provenance).
        """
        started = time.perf_counter()
        node_texts = sorted({n for n in pattern.nodes if not is_unknown(n)})
        rel_texts = sorted({r for r in pattern.relations if not is_unknown(r)})
        node_sets: dict[str, CandidateSet] = {}
        rel_sets: dict[str, CandidateSet] = {}
        if node_texts or rel_texts:
            vectors = self.embedder.embed_documents(node_texts + rel_texts)
            embed_seconds = time.perf_counter() - started
            if node_texts:
                found = self.node_index.search(vectors[: len(node_texts)], self.k_nodes)
                node_sets = dict(zip(node_texts, found))
            if rel_texts:
                found = self.relation_candidates(vectors[len(node_texts):])
                rel_sets = dict(zip(rel_texts, found))
        else:
            embed_seconds = 0.0
        node_cands: list[CandidateSet | None] = [node_sets.get(n) for n in pattern.nodes]
        rel_cands: list[CandidateSet | None] = [rel_sets.get(r) for r in pattern.relations]
        typed = self._type_candidates(pattern, node_cands)
        info = {"vector_search_seconds": time.perf_counter() - started,
                "embed_seconds": embed_seconds, "typed_nodes": typed}
        return node_cands, rel_cands, info

    def relation_candidates(self, vectors: np.ndarray) -> list[CandidateSet]:
        """The ``k_relations`` nearest relations of each query vector (exact; ties by id)."""
        out = []
        for row in self.relation_vectors.distances(vectors):
            ids = smallest_k(row, self.k_relations)
            out.append(CandidateSet(ids, row[ids]))
        return out

    def _type_candidates(self, pattern: Pattern,
                         node_cands: list[CandidateSet | None]) -> list[str]:
        """Fill unknown nodes of components without a known node from the nearest entity types."""
        if self.type_index is None:
            return []
        typed: list[str] = []
        for comp in pattern.components():
            comp_nodes = sorted({v for j in comp for v in pattern.edges[j]})
            if any(node_cands[v] is not None for v in comp_nodes):
                continue
            labels = [placeholder_label(pattern.nodes[v]) for v in comp_nodes]
            found = self.type_index.search(self.embedder.embed_documents(labels), self.k_types)
            for v, types in zip(comp_nodes, found):
                members = np.unique(np.concatenate([self.type_members[t] for t in types.ids]))
                node_cands[v] = CandidateSet(members, np.zeros(len(members)))
                typed.append(pattern.nodes[v])
        return typed
