"""The in-memory knowledge graph: interned integer ids and CSR adjacency on numpy arrays.

Storage (``E`` edges, ``N`` nodes, ``R`` relations):

* ``heads``, ``rels``, ``tails`` -- int32 arrays of length ``E``, the edges sorted by
  ``(head, relation, tail)`` and de-duplicated. An edge's id is its position.
* ``out_indptr`` (``N + 1``) -- edges of node ``v`` are ``out_indptr[v]:out_indptr[v+1]``.
* ``in_order`` / ``in_indptr`` -- edge ids sorted by ``(tail, relation, head)``; the incoming edges
  of ``v`` are ``in_order[in_indptr[v]:in_indptr[v+1]]``.
* ``out_key`` / ``in_key`` -- int64 ``node * R + relation`` in the two orders. Both are sorted, so
  the edges of *(node, relation)* pairs are found for a whole frontier at once with one
  ``np.searchsorted`` instead of scanning a node's neighbours.

Every operation works on arrays of ids (``*_ids`` methods, in :mod:`kgrag.graph.traversal`);
the name-level methods of the :class:`~kgrag.graph.base.GraphStore` protocol here are thin
wrappers that intern names and build result objects only at the end. Reading and writing files,
networkx and databases are free functions of the modules built on this one
(:func:`~kgrag.graph.conversions.read_triples`, :func:`~kgrag.graph.conversions.from_networkx`,
:func:`~kgrag.graph.storage.save_graph` / :func:`~kgrag.graph.storage.load_graph`,
:func:`~kgrag.graph.cypher.neo4j.to_neo4j` ...), all exported by :mod:`kgrag.graph`.
"""

from __future__ import annotations

import logging
import os
import threading
import unicodedata
from collections import Counter
from typing import Any, Iterable, Iterator, Mapping, Sequence

import numpy as np

from kgrag.context.types import Path, Triple, _path_from_names, _triples_from_rows
from kgrag.errors import GraphFormatError, UnknownNodeError, UnknownRelationError
from kgrag.graph.annotations import GraphAnnotations
from kgrag.graph.arrays import (
    _INT64_LIMIT,
    INDEX_DTYPE,
    _count_equal,
    _sort_unique_edges,
    expand_ranges,
)
from kgrag.graph.base import (
    Direction,
    PathStep,
    check_direction,
    parse_relation_path,
)
from kgrag.graph.traversal import ArrayTraversal
from kgrag.text.names import normalize_name

__all__ = ["INDEX_DTYPE", "KnowledgeGraph", "expand_ranges", "normalize_name"]

log = logging.getLogger(__name__)

_SMALL_DEGREE = 256  # single-node one_hop in plain Python up to this many edges (numpy beyond)
_nfc = unicodedata.normalize


class KnowledgeGraph(ArrayTraversal):
    """A directed, relation-labelled multigraph held in memory (the default GraphStore).

    Build it with :meth:`from_triples` or :meth:`from_arrays`, or with the free functions of
    :mod:`kgrag.graph` (``read_triples(path)``, ``from_networkx(g)``, ``load_graph(folder)``);
    save it with ``save_graph(kg, folder)``.

    Duplicate triples are stored once; self-loops are kept (they are facts), and ``stats`` says
    how many of each were seen. Names are normalised with :func:`normalize_name`.

    >>> kg = KnowledgeGraph.from_triples([("Tokyo Godfathers", "directed_by", "Satoshi Kon")])
    >>> kg.one_hop(["Satoshi Kon"])
    [Triple(head='Tokyo Godfathers', relation='directed_by', tail='Satoshi Kon', score=None)]
    """

    supports_cypher = False
    #: how :func:`~kgrag.graph.conversions.read_triples` decided whether the first row was a
    #: header (set by it)
    header_rule: str
    #: the files of a memory-mapped load (:class:`kgrag.graph.mapped.MappedFiles`), else None
    _mapped_files: Any = None

    def __init__(
        self,
        node_names: Sequence[str],
        relation_names: Sequence[str],
        heads: np.ndarray,
        rels: np.ndarray,
        tails: np.ndarray,
        *,
        node_descriptions: Mapping[str, str] | None = None,
        relation_descriptions: Mapping[str, str] | None = None,
        aliases: Mapping[str, Iterable[str]] | None = None,
        relation_labels: Mapping[str, str | Iterable[str]] | str | os.PathLike[str] | None = None,
        annotations: GraphAnnotations | None = None,
        _sorted_unique: bool = False,
    ) -> None:
        self.node_names: list[str] = list(node_names)
        self.relation_names: list[str] = list(relation_names)
        self.node_index: dict[str, int] = {n: i for i, n in enumerate(self.node_names)}
        self.relation_index: dict[str, int] = {r: i for i, r in enumerate(self.relation_names)}
        if len(self.node_index) != len(self.node_names):
            raise GraphFormatError("node names must be unique")
        if len(self.relation_index) != len(self.relation_names):
            raise GraphFormatError("relation names must be unique")
        n, r = len(self.node_names), len(self.relation_names)
        heads = np.asarray(heads, dtype=np.int64)
        rels = np.asarray(rels, dtype=np.int64)
        tails = np.asarray(tails, dtype=np.int64)
        if not (len(heads) == len(rels) == len(tails)):
            raise GraphFormatError("heads, rels and tails must have the same length")
        if len(heads) and (
            heads.min() < 0 or tails.min() < 0 or rels.min() < 0
            or heads.max() >= n or tails.max() >= n or rels.max() >= r
        ):
            raise GraphFormatError("edge arrays reference ids outside the name tables")
        self.stats: dict[str, int] = {"input_edges": int(len(heads))}
        edges = [heads, rels, tails]
        del heads, rels, tails  # _sort_unique_edges frees the int64 copies as soon as it can
        if not _sorted_unique:
            edges = _sort_unique_edges(edges, n, r)
        self.heads, self.rels, self.tails = (a.astype(INDEX_DTYPE, copy=False) for a in edges)
        del edges
        self.stats["duplicate_edges"] = self.stats["input_edges"] - int(len(self.heads))
        self.stats["self_loops"] = int(np.count_nonzero(self.heads == self.tails))
        self._build_index()
        self._init_extras(node_descriptions, relation_descriptions, aliases, relation_labels,
                          annotations)

    @classmethod
    def _from_checked_arrays(
        cls,
        node_names: Sequence[str],
        relation_names: Sequence[str],
        heads: np.ndarray,
        rels: np.ndarray,
        tails: np.ndarray,
        index: Mapping[str, np.ndarray] | None = None,
        **extras: Any,
    ) -> "KnowledgeGraph":
        """A graph over arrays used as they are (no copy): already int32, sorted, unique and in
        range, with ``index`` (``out_indptr``, ``out_key``, ``in_indptr``, ``in_order``,
        ``in_key``) consistent with them, or ``None`` to build it. The caller checked all of
        that (:mod:`kgrag.graph.mapped` does, for memory-mapped loads); read-only arrays work.
        """
        self = cls.__new__(cls)
        self.node_names = list(node_names)
        self.relation_names = list(relation_names)
        self.node_index = {n: i for i, n in enumerate(self.node_names)}
        self.relation_index = {r: i for i, r in enumerate(self.relation_names)}
        if (len(self.node_index) != len(self.node_names)
                or len(self.relation_index) != len(self.relation_names)):
            raise GraphFormatError("node and relation names must be unique")
        self.heads, self.rels, self.tails = heads, rels, tails
        self.stats = {"input_edges": int(len(heads)), "duplicate_edges": 0,
                      "self_loops": _count_equal(heads, tails)}
        if index is None:
            self._build_index()
        else:
            self._r = max(len(self.relation_names), 1)
            for name in ("out_indptr", "out_key", "in_indptr", "in_order", "in_key"):
                setattr(self, name, index[name])
        self._init_extras(extras.get("node_descriptions"), extras.get("relation_descriptions"),
                          extras.get("aliases"), extras.get("relation_labels"),
                          extras.get("annotations"))
        return self

    def _init_extras(self, node_descriptions: Mapping[str, str] | None,
                     relation_descriptions: Mapping[str, str] | None,
                     aliases: Mapping[str, Iterable[str]] | None,
                     relation_labels: Mapping[str, str | Iterable[str]] | str | Any,
                     annotations: GraphAnnotations | None) -> None:
        """Descriptions, aliases and the per-process caches (shared by every constructor)."""
        for what, value in (("node_descriptions", node_descriptions),
                            ("relation_descriptions", relation_descriptions),
                            ("aliases", aliases)):
            if value is not None and not isinstance(value, Mapping):
                raise GraphFormatError(f"{what} must be a mapping (name -> ...), not a "
                                       f"{type(value).__name__}")
        self.node_descriptions: dict[str, str] = dict(node_descriptions or {})
        self.relation_descriptions: dict[str, str] = dict(relation_descriptions or {})
        self.aliases: dict[str, list[str]] = {}
        for name, names in (aliases or {}).items():
            key = normalize_name(name)
            if key not in self.node_index:
                raise UnknownNodeError(f"alias given for unknown node {name!r}")
            if isinstance(names, str):  # one alias, not a sequence of one-letter aliases
                names = [names]
            self.aliases[key] = [normalize_name(a) for a in names if normalize_name(a)]
        #: relation name -> its label and aliases ("director", "directed by"): what embedders
        #: read for it (:func:`kgrag.text.relations.relation_texts`)
        self.relation_labels: dict[str, list[str]] = {}
        if relation_labels is not None and not isinstance(relation_labels, Mapping):
            from kgrag.graph.io import read_relation_labels  # a file of labels

            relation_labels = read_relation_labels(relation_labels)
        for name, labels in (relation_labels or {}).items():
            key = normalize_name(name)
            if key not in self.relation_index:
                raise UnknownRelationError(f"label given for unknown relation {name!r}")
            labels = [labels] if isinstance(labels, str) else list(labels)
            self.relation_labels[key] = [str(x).strip() for x in labels if str(x).strip()]
        #: node types, properties and source chunks from a graph source (LangChain, LlamaIndex)
        self.annotations: GraphAnnotations = annotations or GraphAnnotations()
        self._scratch = threading.local()
        self._path_cache: dict[Any, tuple[tuple[int, Direction], ...] | None] = {}
        self._adj_tables: tuple[np.ndarray, np.ndarray] | None = None
        self._degree_table: np.ndarray | None = None
        self._in_heads: np.ndarray | None = None

    # ------------------------------------------------------------------ building
    def _build_index(self) -> None:
        n, r = len(self.node_names), max(len(self.relation_names), 1)
        self._r = r
        e = len(self.heads)
        rels64 = self.rels.astype(np.int64)
        self.out_indptr = np.zeros(n + 1, dtype=np.int64)
        np.cumsum(np.bincount(self.heads, minlength=n), out=self.out_indptr[1:])
        self.out_key = self.heads.astype(np.int64)
        self.out_key *= r
        self.out_key += rels64
        self.in_indptr = np.zeros(n + 1, dtype=np.int64)
        np.cumsum(np.bincount(self.tails, minlength=n), out=self.in_indptr[1:])
        # Incoming order is (tail, relation, head). Edges are already sorted by head, so a stable
        # order of (tail, relation) breaks ties by head; packing the edge id into the low digits
        # of one int64 turns that into a plain (fast, SIMD) sort of a single array.
        in_key = self.tails.astype(np.int64)
        in_key *= r
        in_key += rels64
        del rels64
        if e and n * r * e < _INT64_LIMIT:
            in_key *= e
            in_key += np.arange(e, dtype=np.int64)
            in_key.sort()
            self.in_order = (in_key % e).astype(INDEX_DTYPE)
            in_key //= e
            self.in_key = in_key
        else:
            order = np.argsort(in_key, kind="stable")
            self.in_order = order.astype(INDEX_DTYPE)
            self.in_key = in_key[order]

    @classmethod
    def from_arrays(
        cls,
        heads: np.ndarray,
        rels: np.ndarray,
        tails: np.ndarray,
        node_names: Sequence[str],
        relation_names: Sequence[str],
        **kwargs: Any,
    ) -> "KnowledgeGraph":
        """Build from integer edge arrays and name tables (fastest; no string interning)."""
        return cls(node_names, relation_names, heads, rels, tails, **kwargs)

    @classmethod
    def from_triples(
        cls,
        triples: Iterable[Sequence[Any]],
        *,
        on_error: str = "raise",
        source: str | None = None,
        **kwargs: Any,
    ) -> "KnowledgeGraph":
        """Build from an iterable of ``(head, relation, tail)`` tuples or
        :class:`~kgrag.context.types.Triple` s (what ``graph.triples()`` gives back).

        A record that is not three non-empty values raises :class:`GraphFormatError` naming its
        position (``on_error="raise"``), or is skipped and counted in ``stats["skipped_records"]``
        (``on_error="skip"``).
        """
        if on_error not in ("raise", "skip"):
            raise ValueError("on_error must be 'raise' or 'skip'")
        nodes: dict[str, int] = {}
        relations: dict[str, int] = {}
        h_ids: list[int] = []
        r_ids: list[int] = []
        t_ids: list[int] = []
        skipped = 0
        for position, record in enumerate(triples, start=1):
            problem = None
            try:
                h, r, t = record.as_tuple() if isinstance(record, Triple) else record
            except (TypeError, ValueError):
                problem = f"expected (head, relation, tail), got {record!r:.200}"
            else:
                h, r, t = normalize_name(h), normalize_name(r), normalize_name(t)
                if not (h and r and t):
                    problem = f"empty head, relation or tail in {record!r:.200}"
            if problem:
                if on_error == "raise":
                    raise GraphFormatError(problem, path=source, line=position)
                skipped += 1
                continue
            h_ids.append(nodes.setdefault(h, len(nodes)))
            r_ids.append(relations.setdefault(r, len(relations)))
            t_ids.append(nodes.setdefault(t, len(nodes)))
        if skipped:
            log.warning("skipped %d malformed record(s)%s", skipped,
                        f" in {source}" if source else "")
        kg = cls(
            list(nodes),
            list(relations),
            np.fromiter(h_ids, dtype=np.int64, count=len(h_ids)),
            np.fromiter(r_ids, dtype=np.int64, count=len(r_ids)),
            np.fromiter(t_ids, dtype=np.int64, count=len(t_ids)),
            **kwargs,
        )
        kg.stats["skipped_records"] = skipped
        return kg

    def check_files(self) -> None:
        """For a graph loaded with ``mmap=True``: raise :class:`~kgrag.errors.GraphLoadError`
        if one of its mapped files was written or truncated since the load (its answers would
        no longer be the saved graph's). The graph's queries call it (at most every 20 ms);
        a no-op for other graphs. See :class:`kgrag.graph.mapped.MappedFiles`."""
        if self._mapped_files is not None:
            self._mapped_files.check()

    # ------------------------------------------------------------------ sizes and lookups
    @property
    def num_nodes(self) -> int:
        return len(self.node_names)

    @property
    def num_edges(self) -> int:
        return int(len(self.heads))

    @property
    def num_relations(self) -> int:
        return len(self.relation_names)

    def __len__(self) -> int:
        return self.num_edges

    def __repr__(self) -> str:
        return (f"KnowledgeGraph(nodes={self.num_nodes}, edges={self.num_edges}, "
                f"relations={self.num_relations})")

    def counts(self) -> dict[str, int]:
        return {"nodes": self.num_nodes, "edges": self.num_edges, "relations": self.num_relations}

    def has_node(self, name: str) -> bool:
        return normalize_name(name) in self.node_index

    def node_id(self, name: str) -> int:
        try:
            return self.node_index[normalize_name(name)]
        except KeyError:
            raise UnknownNodeError(f"node {name!r} is not in the graph",
                                   suggest=(name, self.node_names)) from None

    def relation_id(self, name: str) -> int:
        try:
            return self.relation_index[normalize_name(name)]
        except KeyError:
            raise UnknownRelationError(f"relation {name!r} is not in the graph",
                                       suggest=(name, self.relation_names)) from None

    def _node_or_none(self, name: Any) -> int | None:
        """``node_index.get(normalize_name(name))``, without the function calls for a ``str``."""
        key = _nfc("NFC", name).strip() if type(name) is str else normalize_name(name)
        return self.node_index.get(key)

    def node_ids(self, names: Iterable[str], *, missing: str = "ignore") -> np.ndarray:
        """Ids of ``names`` in order; unknown names are dropped (``missing="ignore"``) or raise."""
        ids = []
        for name in names:
            i = self.node_index.get(normalize_name(name))
            if i is None:
                if missing == "raise":
                    raise UnknownNodeError(f"node {name!r} is not in the graph",
                                           suggest=(name, self.node_names))
                continue
            ids.append(i)
        return np.asarray(ids, dtype=np.int64)

    def iter_node_names(self, batch_size: int = 10_000) -> Iterator[str]:
        return iter(self.node_names)

    def list_relations(self) -> list[str]:
        return list(self.relation_names)

    def triples(self) -> Iterator[Triple]:
        if self._mapped_files is not None:
            self._mapped_files.check()
        names, rnames = self.node_names, self.relation_names
        for h, r, t in zip(self.heads.tolist(), self.rels.tolist(), self.tails.tolist()):
            yield Triple(names[h], rnames[r], names[t])

    def relation_counts(self) -> dict[str, int]:
        if self._mapped_files is not None:
            self._mapped_files.check()
        counts = np.bincount(self.rels, minlength=self.num_relations)
        return {self.relation_names[i]: int(c) for i, c in enumerate(counts)}

    def _relation_ids(self, relations: Iterable[str | int] | None) -> np.ndarray | None:
        if relations is None:
            return None
        ids = [r if isinstance(r, (int, np.integer)) else self.relation_id(r) for r in relations]
        return np.asarray(sorted(set(int(i) for i in ids)), dtype=np.int64)

    # ------------------------------------------------------------------ name-level (GraphStore)
    def edge_triples(self, edge_ids: Iterable[int]) -> list[Triple]:
        if self._mapped_files is not None:
            self._mapped_files.check()
        names, rnames = self.node_names, self.relation_names
        e = np.asarray(list(edge_ids) if not isinstance(edge_ids, np.ndarray) else edge_ids,
                       dtype=np.int64)
        return _triples_from_rows(zip(self.heads[e].tolist(), self.rels[e].tolist(),
                                      self.tails[e].tolist()), names, rnames)

    def _make_path(self, nodes: np.ndarray, edges: np.ndarray, forward: np.ndarray) -> Path:
        names, rnames = self.node_names, self.relation_names
        return _path_from_names(
            tuple([names[i] for i in nodes.tolist()]),
            tuple([rnames[r] for r in self.rels[edges].tolist()]),
            tuple([bool(f) for f in forward.tolist()]),
        )

    def one_hop(self, nodes: Iterable[str], *, direction: Direction = "both",
                relations: Iterable[str] | None = None, limit: int | None = None) -> list[Triple]:
        # one node (a plain list or tuple): plain Python over its adjacency rows
        if self._mapped_files is not None:
            self._mapped_files.check()
        if relations is None and isinstance(nodes, (list, tuple)) and len(nodes) == 1:
            check_direction(direction)
            v = self._node_or_none(nodes[0])
            if v is None:
                return []
            single = self._one_hop_single(v, direction, limit)
            if single is not None:
                return single
        ids = self.node_ids(nodes)
        rel_filter = None if relations is None else [
            r for r in relations if normalize_name(r) in self.relation_index]
        e = self.edges_ids(ids, direction, rel_filter)
        if limit is not None:
            e = e[:limit]
        return self.edge_triples(e)

    def _one_hop_single(self, v: int, direction: Direction, limit: int | None
                        ) -> list[Triple] | None:
        """:meth:`one_hop` of one node in plain Python (numpy's per-call overhead dominates at
        a few edges): the same triples in the same order (by edge id). ``None`` for a node
        with more than ``_SMALL_DEGREE`` edges, which the array code handles faster."""
        adj_ptr, adj_rows = self._adj_tables or self._adjacency_rows()
        start, end = adj_ptr[v:v + 2].tolist()
        if end - start > _SMALL_DEGREE:
            return None
        rows = adj_rows[start:end].tolist() if end > start else []
        if direction == "out":
            rows = [row for row in rows if row[0] == v]
        elif direction == "in":
            rows = [row for row in rows if row[2] == v]
        if limit is not None:
            rows = rows[:limit]
        return _triples_from_rows(rows, self.node_names, self.relation_names)

    def follow_path(self, sources: Iterable[str], path: str | Sequence[str | PathStep], *,
                    fan_out: int | None = None, max_paths: int | None = None,
                    default_direction: Direction = "out") -> list[Path]:
        """Walks from ``sources`` along ``path`` (``"r1 -> r2_inv"`` or steps); [] if unknown."""
        if self._mapped_files is not None:
            self._mapped_files.check()
        id_steps = self._id_steps(path, default_direction)
        if id_steps is None:
            return []
        if isinstance(sources, (list, tuple)) and len(sources) == 1:  # one source: plain Python
            source = self._node_or_none(sources[0])
            if source is None:
                return []
            walks = self._walks_one_source(source, id_steps, fan_out, max_paths)
            if walks is not None:
                names, rnames = self.node_names, self.relation_names
                relations = tuple([rnames[rel] for rel, _ in id_steps])  # the same for every walk
                return [_path_from_names(tuple([names[i] for i in nodes]), relations, tuple(fwd))
                        for nodes, _, fwd in walks]
        nodes, edges, fwd = self.follow_path_ids(self.node_ids(sources), id_steps,
                                                 fan_out=fan_out, max_paths=max_paths)
        return [self._make_path(nodes[i], edges[i], fwd[i]) for i in range(len(nodes))]

    def _id_steps(self, path: str | Sequence[str | PathStep], default_direction: Direction
                  ) -> tuple[tuple[int, Direction], ...] | None:
        """``path`` parsed into ``(relation id, direction)`` steps; ``None`` when a relation is
        unknown. Parsed paths are memoised per graph (names and relations never change)."""
        if not isinstance(path, str):
            path = tuple(path)  # once: it may be an iterator
        try:
            key: Any = (path, default_direction)
            hash(key)
        except TypeError:  # unhashable steps: parse every time
            key = None
        cache = self._path_cache
        if key is not None and key in cache:
            return cache[key]
        steps = parse_relation_path(path, default_direction=default_direction)
        try:
            id_steps: tuple[tuple[int, Direction], ...] | None = tuple(
                (self.relation_id(s.relation), s.direction) for s in steps)
        except UnknownRelationError:
            id_steps = None
        if key is not None:
            if len(cache) >= 4096:
                cache.clear()
            cache[key] = id_steps
        return id_steps

    def shortest_paths(self, sources: Iterable[str], targets: Iterable[str], *, max_hops: int = 3,
                       directed: bool = False, max_paths: int | None = None) -> list[Path]:
        found = self.shortest_paths_ids(self.node_ids(sources), self.node_ids(targets),
                                        max_hops=max_hops, directed=directed, max_paths=max_paths)
        return [self._make_path(n, e, f) for n, e, f in found]

    def k_hop_subgraph(self, nodes: Iterable[str], *, hops: int = 2, direction: Direction = "both",
                       max_edges: int | None = None) -> list[Triple]:
        _, edges = self.k_hop_subgraph_ids(self.node_ids(nodes), hops=hops, direction=direction,
                                           max_edges=max_edges)
        return self.edge_triples(edges)

    def degree(self, nodes: Iterable[str], *, direction: Direction = "both") -> dict[str, int]:
        names = [normalize_name(n) for n in nodes if normalize_name(n) in self.node_index]
        deg = self.degree_ids(np.asarray([self.node_index[n] for n in names], np.int64), direction)
        return dict(zip(names, deg.tolist()))

    def schema_summary(self, max_relations: int = 50) -> str:
        """Relations by frequency, each with its edge count and one example edge."""
        counts = np.bincount(self.rels, minlength=self.num_relations)
        order = np.argsort(-counts, kind="stable")[:max_relations]
        present, first_edge = np.unique(self.rels, return_index=True)
        example_of = dict(zip(present.tolist(), first_edge.tolist()))
        lines = [f"Knowledge graph: {self.num_nodes} entities, {self.num_edges} edges, "
                 f"{self.num_relations} relation types.", "Relations (edge count; example):"]
        for rel in order.tolist():
            if counts[rel] == 0:
                continue
            example = example_of[rel]
            h, t = self.node_names[self.heads[example]], self.node_names[self.tails[example]]
            desc = self.relation_descriptions.get(self.relation_names[rel])
            line = f"- {self.relation_names[rel]} ({int(counts[rel])}; e.g. {h} -> {t})"
            lines.append(line + (f": {desc}" if desc else ""))
        if self.num_relations > max_relations:
            lines.append(f"... and {self.num_relations - max_relations} more relations")
        return "\n".join(lines)

    def relation_histogram(self) -> list[tuple[str, int]]:
        return Counter(self.relation_counts()).most_common()
