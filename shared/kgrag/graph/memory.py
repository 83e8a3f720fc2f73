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

Every operation works on arrays of ids (``*_ids`` methods); the name-level methods of the
:class:`~kgrag.graph.base.GraphStore` protocol are thin wrappers that intern names and build
result objects only at the end.
"""

from __future__ import annotations

import logging
import threading
import unicodedata
from collections import Counter
from typing import TYPE_CHECKING, Any, Iterable, Iterator, Mapping, Sequence

import numpy as np

from kgrag.context.types import Path, Triple, _path_from_names, _triples_from_rows
from kgrag.errors import GraphFormatError, UnknownNodeError, UnknownRelationError
from kgrag.graph.annotations import GraphAnnotations
from kgrag.graph.base import Direction, PathStep, check_direction, parse_relation_path

if TYPE_CHECKING:  # pragma: no cover
    import networkx as nx

log = logging.getLogger(__name__)

INDEX_DTYPE = np.int32
_SMALL_DEGREE = 256  # single-node one_hop in plain Python up to this many edges (numpy beyond)
_nfc = unicodedata.normalize


def normalize_name(name: Any) -> str:
    """Canonical form of a node or relation name: ``str``, NFC-normalised, outer space stripped.

    NFC makes a composed "é" and "e" + combining accent the same node; nothing else (case,
    inner whitespace) is changed, because names in real KGs differ by exactly those.
    """
    return unicodedata.normalize("NFC", str(name)).strip()


_INT64_LIMIT = 2**62  # packed sort keys stay below this (headroom for the arithmetic)


def _sort_unique_edges(edges: list[np.ndarray], n: int, r: int) -> list[np.ndarray]:
    """``[heads, rels, tails]`` sorted by ``(head, relation, tail)`` without duplicates.

    When ``(head * R + relation) * N + tail`` fits in an int64 the three arrays are packed into
    one key (and the given list is emptied, so the int64 inputs are freed early): input that is
    already strictly increasing (a saved graph) is only checked, other input is sorted on that
    key and de-duplicated; the key is then unpacked into int32 arrays. Otherwise ``np.lexsort``.
    """
    heads, rels, tails = edges
    if len(heads) == 0:
        return [heads, rels, tails]
    if n * n * max(r, 1) < _INT64_LIMIT:
        edges.clear()
        key = heads * r
        del heads
        key += rels
        del rels
        key *= n
        key += tails
        del tails
        if len(key) > 1 and not np.all(key[1:] > key[:-1]):
            key.sort()  # np.sort + a mask: much faster than np.unique on large int64 arrays
            keep = np.empty(len(key), dtype=bool)
            keep[0] = True
            np.not_equal(key[1:], key[:-1], out=keep[1:])
            key = key[keep]
            del keep
        tails = np.empty(len(key), INDEX_DTYPE)
        np.remainder(key, n, out=tails, casting="unsafe")
        key //= n
        rels = np.empty(len(key), INDEX_DTYPE)
        np.remainder(key, r, out=rels, casting="unsafe")
        key //= r
        return [key.astype(INDEX_DTYPE), rels, tails]
    order = np.lexsort((tails, rels, heads))
    heads, rels, tails = heads[order], rels[order], tails[order]
    if len(heads) > 1:
        keep = np.ones(len(heads), dtype=bool)
        keep[1:] = (heads[1:] != heads[:-1]) | (rels[1:] != rels[:-1]) | (tails[1:] != tails[:-1])
        heads, rels, tails = heads[keep], rels[keep], tails[keep]
    return [heads, rels, tails]


def _count_equal(a: np.ndarray, b: np.ndarray, chunk: int = 1 << 20) -> int:
    """``count_nonzero(a == b)`` in chunks (no full-size temporary for mapped arrays)."""
    return sum(int(np.count_nonzero(a[i:i + chunk] == b[i:i + chunk]))
               for i in range(0, len(a), chunk))


def _unique(values: np.ndarray) -> np.ndarray:
    """Sorted distinct values (``np.sort`` + a mask: many times faster than ``np.unique`` for
    int64 arrays in numpy 2.x, which matters on every traversal step)."""
    values = np.sort(values)
    if len(values) < 2:
        return values
    keep = np.empty(len(values), dtype=bool)
    keep[0] = True
    np.not_equal(values[1:], values[:-1], out=keep[1:])
    return values[keep]


def _isin_sorted(values: np.ndarray, sorted_set: np.ndarray) -> np.ndarray:
    """``np.isin(values, sorted_set)`` for a sorted ``sorted_set`` (binary search, no hashing)."""
    if len(sorted_set) == 0:
        return np.zeros(len(values), dtype=bool)
    idx = np.searchsorted(sorted_set, values)
    idx[idx == len(sorted_set)] = 0
    return sorted_set[idx] == values


def _range_positions(starts: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """``concat(arange(s, s + c) for s, c in zip(starts, counts))`` with one cumulative sum."""
    nonzero = counts > 0
    if not nonzero.all():
        starts, counts = starts[nonzero], counts[nonzero]
    if len(counts) == 0:
        return np.empty(0, np.int64)
    if len(counts) == 1:
        return np.arange(int(starts[0]), int(starts[0]) + int(counts[0]), dtype=np.int64)
    ends = np.cumsum(counts)
    steps = np.ones(int(ends[-1]), dtype=np.int64)
    steps[0] = starts[0]
    # at the first position of each later range, jump from the previous range's last position
    steps[ends[:-1]] = starts[1:] - (starts[:-1] + counts[:-1] - 1)
    return np.cumsum(steps)


def expand_ranges(starts: np.ndarray, counts: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Positions ``starts[i] .. starts[i]+counts[i]-1`` for all i, and the owner ``i`` of each."""
    if len(counts) == 1:  # the common single-node case, without the repeat/cumsum machinery
        start, count = int(starts[0]), int(counts[0])
        return np.arange(start, start + count, dtype=np.int64), np.zeros(count, np.int64)
    counts = counts.astype(np.int64, copy=False)
    total = int(counts.sum())
    if total == 0:
        return np.empty(0, np.int64), np.empty(0, np.int64)
    owner = np.repeat(np.arange(len(counts), dtype=np.int64), counts)
    offsets = np.cumsum(counts) - counts
    positions = np.arange(total, dtype=np.int64) - np.repeat(offsets, counts) + np.repeat(
        starts.astype(np.int64, copy=False), counts
    )
    return positions, owner


class KnowledgeGraph:
    """A directed, relation-labelled multigraph held in memory (the default GraphStore).

    Build it with :meth:`from_triples`, :meth:`from_csv`, :meth:`from_networkx` or
    :meth:`from_arrays`; save and load it with :meth:`save` / :meth:`load`.

    Duplicate triples are stored once; self-loops are kept (they are facts), and ``stats`` says
    how many of each were seen. Names are normalised with :func:`normalize_name`.

    >>> kg = KnowledgeGraph.from_triples([("Tokyo Godfathers", "directed_by", "Satoshi Kon")])
    >>> kg.one_hop(["Satoshi Kon"])
    [Triple(head='Tokyo Godfathers', relation='directed_by', tail='Satoshi Kon', score=None)]
    """

    supports_cypher = False

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
        relation_labels: Mapping[str, str | Iterable[str]] | str | Any = None,
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
        """Build from an iterable of ``(head, relation, tail)``.

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
                h, r, t = record
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
            log.warning("skipped %d malformed record(s)%s", skipped, f" in {source}" if source else "")
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

    @classmethod
    def from_csv(cls, path: Any, *, sep: str | None = None, columns: Sequence[int | str] | None = None,
                 header: bool | None = None, on_error: str = "raise", encoding: str = "utf-8",
                 **kwargs: Any) -> "KnowledgeGraph":
        """Load triples from a CSV / TSV / pipe-separated file. See :mod:`kgrag.graph.io`.

        Plain files (three unquoted fields per line) are read block-wise by
        :mod:`kgrag.graph.bulk_csv`; anything else goes through the line-by-line reader, which
        also produces the error messages. Both give the same graph.
        """
        from kgrag.graph.bulk_csv import read_plain_triples
        from kgrag.graph.io import read_triples

        # the reader checks the arguments and that the file exists, for both paths
        triples = read_triples(path, sep=sep, columns=columns, header=header, on_error=on_error,
                               encoding=encoding)
        if columns is None:
            plain = read_plain_triples(triples.path, sep=sep, header=header, encoding=encoding)
            if plain is not None:
                names, relation_names, heads, rels, tails = plain
                kg = cls(names, relation_names, heads, rels, tails, **kwargs)
                kg.stats["skipped_records"] = 0
                return kg
        kg = cls.from_triples(triples, on_error="raise", source=str(path), **kwargs)
        kg.stats["skipped_records"] = triples.skipped
        return kg

    @classmethod
    def from_networkx(cls, graph: "nx.Graph", *, relation_key: str = "relation",
                      default_relation: str | None = None, label_key: str = "label",
                      **kwargs: Any) -> "KnowledgeGraph":
        """Build from a networkx (Multi)DiGraph whose edges carry the relation in ``relation_key``.

        Node attributes ``description`` and ``aliases`` are picked up; an edge attribute
        ``label_key`` (``"label"``) names its relation in words (``relation_labels``). An edge
        without the relation attribute raises :class:`GraphFormatError` unless
        ``default_relation`` is given. An undirected graph is read with each edge in its stored
        orientation.
        """
        labels: dict[str, list[str]] = {}

        def edges() -> Iterator[tuple[Any, Any, Any]]:
            for u, v, data in graph.edges(data=True):
                rel = data.get(relation_key, default_relation)
                if rel is None:
                    raise GraphFormatError(
                        f"edge ({u!r}, {v!r}) has no {relation_key!r} attribute; "
                        "pass relation_key= or default_relation="
                    )
                label = data.get(label_key)
                if label:
                    seen = labels.setdefault(normalize_name(rel), [])
                    if str(label) not in seen:
                        seen.append(str(label))
                yield (u, rel, v)

        descriptions = {normalize_name(n): str(d["description"]) for n, d in graph.nodes(data=True)
                        if d.get("description")}
        aliases = {normalize_name(n): d["aliases"] for n, d in graph.nodes(data=True)
                   if d.get("aliases")}
        kwargs.setdefault("node_descriptions", descriptions)
        kwargs.setdefault("aliases", aliases)
        kg = cls.from_triples(edges(), **kwargs)
        if labels and "relation_labels" not in kwargs:
            kg.relation_labels = {r: names for r, names in labels.items() if r in kg.relation_index}
        isolated = [normalize_name(n) for n in graph.nodes if normalize_name(n) not in kg.node_index]
        if isolated:  # keep isolated nodes: they can still be linked and described
            edges_only = kg
            kg = cls(kg.node_names + isolated, kg.relation_names, kg.heads, kg.rels, kg.tails,
                     node_descriptions=kg.node_descriptions,
                     relation_descriptions=kg.relation_descriptions, aliases=kg.aliases,
                     relation_labels=kg.relation_labels, annotations=kg.annotations,
                     _sorted_unique=True)
            kg.stats = dict(edges_only.stats)  # the input counts, not those of the rebuild
        return kg

    @classmethod
    def from_llama_index(cls, source: Any, **kwargs: Any) -> "KnowledgeGraph":
        """Build from a LlamaIndex ``PropertyGraphIndex`` or any ``PropertyGraphStore``, keeping
        node types, properties, descriptions and chunk provenance
        (:func:`kgrag.graph.sources.llama_index.from_llama_index`)."""
        from kgrag.graph.sources.llama_index import from_llama_index

        return from_llama_index(source, cls=cls, **kwargs)

    @classmethod
    def from_graph_documents(cls, graph_documents: Any, **kwargs: Any) -> "KnowledgeGraph":
        """Build from LangChain ``GraphDocument``\\ s (e.g. ``LLMGraphTransformer``'s output),
        keeping node types, properties and source documents
        (:func:`kgrag.graph.sources.langchain.from_graph_documents`)."""
        from kgrag.graph.sources.langchain import from_graph_documents

        return from_graph_documents(graph_documents, cls=cls, **kwargs)

    def to_neo4j(self, target: Any, username: str | None = None, password: str | None = None,
                 **options: Any) -> Any:
        """Write this graph into Neo4j (batched, idempotent MERGE) and return a
        :class:`~kgrag.graph.neo4j.Neo4jGraphStore` over it. ``target``: a Bolt URI, a
        ``langchain_neo4j.Neo4jGraph`` or a ``neo4j.Driver``; see
        :func:`kgrag.graph.db_load.to_neo4j` for the options."""
        from kgrag.graph.db_load import to_neo4j

        return to_neo4j(self, target, username, password, **options)

    def to_falkordb(self, target: Any = "localhost", port: int = 6379, **options: Any) -> Any:
        """Write this graph into FalkorDB (batched, idempotent MERGE) and return a
        :class:`~kgrag.graph.falkordb.FalkorDBGraphStore` over it. ``target``: a host name or
        a ``falkordb.Graph``; see :func:`kgrag.graph.db_load.to_falkordb` for the options."""
        from kgrag.graph.db_load import to_falkordb

        return to_falkordb(self, target, port, **options)

    def to_networkx(self) -> "nx.MultiDiGraph":
        """Export as a ``networkx.MultiDiGraph`` with the relation on each edge's ``relation``."""
        import networkx as nx

        g = nx.MultiDiGraph()
        for name in self.node_names:
            attrs: dict[str, Any] = {}
            if name in self.node_descriptions:
                attrs["description"] = self.node_descriptions[name]
            if name in self.aliases:
                attrs["aliases"] = list(self.aliases[name])
            g.add_node(name, **attrs)
        names, rnames = self.node_names, self.relation_names
        labels = [self.relation_labels.get(r, [None])[0] for r in rnames]
        g.add_edges_from(
            (names[h], names[t], {"relation": rnames[r]} if labels[r] is None
             else {"relation": rnames[r], "label": labels[r]})
            for h, r, t in zip(self.heads.tolist(), self.rels.tolist(), self.tails.tolist())
        )
        return g

    # ------------------------------------------------------------------ persistence
    def save(self, directory: Any, *, index: bool = True) -> None:
        """Write a JSON manifest, names as JSON and edges as ``.npy`` (no pickle); with
        ``index``, the adjacency index too, so ``load(..., mmap=True)`` can share it."""
        from kgrag.graph.io import save_graph

        save_graph(self, directory, index=index)

    @classmethod
    def load(cls, directory: Any, *, mmap: bool = False) -> "KnowledgeGraph":
        """Load a directory written by :meth:`save`; raises :class:`~kgrag.errors.GraphLoadError`.

        ``mmap=True`` maps the edge arrays and the adjacency index read-only from the saved
        ``.npy`` files instead of reading them (after checking them), so processes that load
        the same folder share one copy in the page cache (see :mod:`kgrag.graph.mapped`).
        """
        from kgrag.graph.io import load_graph

        return load_graph(cls, directory, mmap=mmap)

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
            raise UnknownNodeError(f"node {name!r} is not in the graph") from None

    def relation_id(self, name: str) -> int:
        try:
            return self.relation_index[normalize_name(name)]
        except KeyError:
            raise UnknownRelationError(f"relation {name!r} is not in the graph") from None

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
                    raise UnknownNodeError(f"node {name!r} is not in the graph")
                continue
            ids.append(i)
        return np.asarray(ids, dtype=np.int64)

    def iter_node_names(self, batch_size: int = 10_000) -> Iterator[str]:
        return iter(self.node_names)

    def list_relations(self) -> list[str]:
        return list(self.relation_names)

    def triples(self) -> Iterator[Triple]:
        names, rnames = self.node_names, self.relation_names
        for h, r, t in zip(self.heads.tolist(), self.rels.tolist(), self.tails.tolist()):
            yield Triple(names[h], rnames[r], names[t])

    def relation_counts(self) -> dict[str, int]:
        counts = np.bincount(self.rels, minlength=self.num_relations)
        return {self.relation_names[i]: int(c) for i, c in enumerate(counts)}

    def _relation_ids(self, relations: Iterable[str | int] | None) -> np.ndarray | None:
        if relations is None:
            return None
        ids = [r if isinstance(r, (int, np.integer)) else self.relation_id(r) for r in relations]
        return np.asarray(sorted(set(int(i) for i in ids)), dtype=np.int64)

    # ------------------------------------------------------------------ id-level operations
    def degree_ids(self, nodes: np.ndarray, direction: Direction = "both") -> np.ndarray:
        nodes = np.asarray(nodes, dtype=np.int64)
        check_direction(direction)
        deg = np.zeros(len(nodes), dtype=np.int64)
        if direction in ("out", "both"):
            deg += self.out_indptr[nodes + 1] - self.out_indptr[nodes]
        if direction in ("in", "both"):
            deg += self.in_indptr[nodes + 1] - self.in_indptr[nodes]
        return deg

    def _pair_ranges(self, nodes: np.ndarray, rel: int, reverse: bool) -> tuple[np.ndarray, np.ndarray]:
        """Start and count of the (node, rel) block in out_key (or in_key when ``reverse``)."""
        key = self.in_key if reverse else self.out_key
        probe = nodes.astype(np.int64) * self._r + rel
        lo = np.searchsorted(key, probe, side="left")
        hi = np.searchsorted(key, probe, side="right")
        return lo, hi - lo

    def _edges_one_direction(self, nodes: np.ndarray, reverse: bool,
                             rel_ids: np.ndarray | None) -> tuple[np.ndarray, np.ndarray]:
        """(edge ids, owner index into ``nodes``) of edges leaving (or entering) ``nodes``."""
        if rel_ids is None:
            indptr = self.in_indptr if reverse else self.out_indptr
            starts, counts = indptr[nodes], indptr[nodes + 1] - indptr[nodes]
            pos, owner = expand_ranges(starts, counts)
        else:
            parts_pos, parts_owner = [], []
            for rel in rel_ids.tolist():
                starts, counts = self._pair_ranges(nodes, rel, reverse)
                p, o = expand_ranges(starts, counts)
                parts_pos.append(p)
                parts_owner.append(o)
            pos = np.concatenate(parts_pos) if parts_pos else np.empty(0, np.int64)
            owner = np.concatenate(parts_owner) if parts_owner else np.empty(0, np.int64)
        edges = self.in_order[pos].astype(np.int64) if reverse else pos
        return edges, owner

    def incident_ids(self, nodes: np.ndarray, *, self_loops_once: bool = True
                     ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """Every edge at ``nodes`` in either direction, per entry of ``nodes`` (repeats allowed):
        ``(owner index into nodes, edge id, other end, forward)``, out-edges first.

        A self-loop is both an out-edge and an in-edge of its node; ``self_loops_once`` keeps
        only its out-edge copy (set it False to walk it both ways).
        """
        nodes = np.asarray(nodes, dtype=np.int64)
        e_out, own_out = self._edges_one_direction(nodes, False, None)
        e_in, own_in = self._edges_one_direction(nodes, True, None)
        if self_loops_once:
            keep = self.heads[e_in] != self.tails[e_in]
            e_in, own_in = e_in[keep], own_in[keep]
        other = np.concatenate([self.tails[e_out], self.heads[e_in]]).astype(np.int64)
        forward = np.concatenate([np.ones(len(e_out), bool), np.zeros(len(e_in), bool)])
        return np.concatenate([own_out, own_in]), np.concatenate([e_out, e_in]), other, forward

    def edges_ids(self, nodes: np.ndarray, direction: Direction = "both",
                  relations: Iterable[str | int] | None = None) -> np.ndarray:
        """Sorted unique ids of the edges touching ``nodes`` in ``direction``."""
        check_direction(direction)
        nodes = _unique(np.asarray(nodes, dtype=np.int64))
        rel_ids = self._relation_ids(relations)
        if len(nodes) == 1 and rel_ids is None:  # one node: its edges are CSR slices
            v = int(nodes[0])
            single = []
            if direction in ("out", "both"):
                single.append(np.arange(self.out_indptr[v], self.out_indptr[v + 1], dtype=np.int64))
            if direction in ("in", "both"):
                single.append(self.in_order[self.in_indptr[v]:self.in_indptr[v + 1]].astype(np.int64))
            return single[0] if direction == "out" else _unique(np.concatenate(single))
        parts = []
        if direction in ("out", "both"):
            parts.append(self._edges_one_direction(nodes, False, rel_ids)[0])
        if direction in ("in", "both"):
            parts.append(self._edges_one_direction(nodes, True, rel_ids)[0])
        return _unique(np.concatenate(parts)) if parts else np.empty(0, np.int64)

    def neighbors_ids(self, nodes: np.ndarray, direction: Direction = "both") -> np.ndarray:
        """Sorted unique neighbours of ``nodes`` (the nodes themselves only via self-loops/cycles)."""
        nodes = np.asarray(nodes, dtype=np.int64)
        out = []
        if direction in ("out", "both"):
            e, _ = self._edges_one_direction(nodes, False, None)
            out.append(self.tails[e])
        if direction in ("in", "both"):
            e, _ = self._edges_one_direction(nodes, True, None)
            out.append(self.heads[e])
        return _unique(np.concatenate(out)).astype(np.int64) if out else np.empty(0, np.int64)

    def follow_path_ids(
        self,
        sources: np.ndarray,
        steps: Sequence[tuple[int, Direction]],
        *,
        fan_out: int | None = None,
        max_paths: int | None = None,
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Walk relation ``steps`` from every source; return only complete walks.

        Returns ``(nodes, edges, forward)`` with shapes ``(P, L+1)``, ``(P, L)``, ``(P, L)``.
        ``fan_out`` caps the edges followed from one walk at one step (lowest edge ids first,
        so the result is deterministic); ``max_paths`` caps the number of walks kept after each
        step (earliest first). A ``"both"`` step follows outgoing edges, then incoming ones.
        """
        sources = np.asarray(sources, dtype=np.int64).ravel()
        if len(sources) == 1 and 0 <= int(sources[0]) < self.num_nodes:
            walks = self._walks_one_source(int(sources[0]), steps, fan_out, max_paths)
            if walks is not None:
                n_walks, length = len(walks), len(steps)
                return (np.array([w[0] for w in walks], dtype=np.int64).reshape(n_walks, length + 1),
                        np.array([w[1] for w in walks], dtype=np.int64).reshape(n_walks, length),
                        np.array([w[2] for w in walks], dtype=bool).reshape(n_walks, length))
        frontier = _unique(sources)
        # Per step: the frontier it started from, and for each surviving walk its owner (index
        # into that frontier), edge and direction. Walks are assembled once at the end by
        # following owners backwards, instead of re-stacking every column at every step.
        history: list[tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]] = []
        for rel, direction in steps:
            check_direction(direction)
            cand = []
            for reverse in ((False,) if direction == "out" else (True,) if direction == "in"
                            else (False, True)):
                starts, counts = self._pair_ranges(frontier, int(rel), reverse)
                if fan_out is not None:
                    counts = np.minimum(counts, fan_out)
                pos, owner = expand_ranges(starts, counts)
                e = self.in_order[pos].astype(np.int64) if reverse else pos
                nxt = (self.heads if reverse else self.tails)[e].astype(np.int64)
                cand.append((e, owner, nxt, np.full(len(e), not reverse)))
            if len(cand) == 1:
                e, owner, nxt, fwd = cand[0]
            else:
                e, owner, nxt, fwd = (np.concatenate(parts) for parts in zip(*cand))
            if direction == "both":
                # keep each walk's candidates together, and honour fan_out across both directions
                order = np.argsort(owner, kind="stable")
                e, owner, nxt, fwd = e[order], owner[order], nxt[order], fwd[order]
                if fan_out is not None and len(owner):
                    first = np.r_[0, np.flatnonzero(np.diff(owner)) + 1]
                    rank = np.arange(len(owner)) - np.repeat(first, np.diff(np.r_[first, len(owner)]))
                    keep = rank < fan_out
                    e, owner, nxt, fwd = e[keep], owner[keep], nxt[keep], fwd[keep]
            if max_paths is not None and len(owner) > max_paths:
                e, owner, nxt, fwd = e[:max_paths], owner[:max_paths], nxt[:max_paths], fwd[:max_paths]
            history.append((frontier, owner, e, fwd))
            frontier = nxt
        n_walks, length = len(frontier), len(history)
        nodes = np.empty((n_walks, length + 1), dtype=np.int64)
        edges = np.empty((n_walks, length), dtype=np.int64)
        forward = np.empty((n_walks, length), dtype=bool)
        nodes[:, length] = frontier
        walk = np.arange(n_walks)
        for k in range(length - 1, -1, -1):
            step_frontier, owner, e, fwd = history[k]
            edges[:, k] = e[walk]
            forward[:, k] = fwd[walk]
            walk = owner[walk]
            nodes[:, k] = step_frontier[walk]
        return nodes, edges, forward

    def _block(self, node: int, rel: int, reverse: bool) -> tuple[list[int], list[int]]:
        """(edge ids, next nodes) of the *(node, rel)* block, in index order, as Python lists."""
        adj_ptr, adj_rows = self._adj_tables or self._adjacency_rows()
        adj_start, adj_end = adj_ptr[node:node + 2].tolist()
        if adj_end - adj_start <= 64:  # one slice of the node's rows, filtered in Python
            rows = adj_rows[adj_start:adj_end].tolist()
            if reverse:
                block = [(row[3], row[0]) for row in rows if row[2] == node and row[1] == rel]
            else:
                block = [(row[3], row[2]) for row in rows if row[0] == node and row[1] == rel]
            return [b[0] for b in block], [b[1] for b in block]
        indptr = self.in_indptr if reverse else self.out_indptr
        start, end = indptr[node:node + 2].tolist()
        key = self.in_key if reverse else self.out_key
        probe = node * self._r + rel
        view = key[start:end]
        lo = start + int(np.searchsorted(view, probe, side="left"))
        hi = start + int(np.searchsorted(view, probe, side="right"))
        if lo == hi:
            return [], []
        if reverse:
            edges = self.in_order[lo:hi]
            return edges.tolist(), self.heads[edges].tolist()
        return list(range(lo, hi)), self.tails[lo:hi].tolist()

    def _walks_one_source(self, source: int, steps: Sequence[tuple[int, Direction]],
                          fan_out: int | None, max_paths: int | None, limit: int = 32
                          ) -> list[tuple[list[int], list[int], list[bool]]] | None:
        """:meth:`follow_path_ids` for one source in plain Python (numpy's per-call overhead
        dominates such small walks): the same walks in the same order, each as lists
        ``(nodes, edges, forward)``; ``None`` once more than ``limit`` walks are alive, so the
        caller redoes it with arrays."""
        for _, direction in steps:
            check_direction(direction)
        walks: list[tuple[list[int], list[int], list[bool]]] = [([source], [], [])]
        for rel, direction in steps:
            grown = []
            for nodes, edges, fwds in walks:
                cand: list[tuple[int, int, bool]] = []
                for reverse in ((False,) if direction == "out" else (True,) if direction == "in"
                                else (False, True)):
                    block_edges, block_next = self._block(nodes[-1], int(rel), reverse)
                    if fan_out is not None:
                        block_edges, block_next = block_edges[:fan_out], block_next[:fan_out]
                    cand += zip(block_edges, block_next, [not reverse] * len(block_edges))
                if fan_out is not None:
                    cand = cand[:fan_out]
                grown += [(nodes + [nxt], edges + [e], fwds + [f]) for e, nxt, f in cand]
            if max_paths is not None:
                grown = grown[:max_paths]
            if len(grown) > limit:
                return None
            walks = grown
        return walks

    def _scratch_arrays(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Per-thread BFS arrays of length N, reset after use (so a search costs O(visited))."""
        s = self._scratch
        if getattr(s, "n", None) != self.num_nodes:
            s.n = self.num_nodes
            s.dist = np.full(self.num_nodes, -1, dtype=np.int32)
            s.parent_edge = np.full(self.num_nodes, -1, dtype=np.int64)
            s.parent_fwd = np.zeros(self.num_nodes, dtype=bool)
        return s.dist, s.parent_edge, s.parent_fwd

    def _scratch_masks(self) -> tuple[np.ndarray, np.ndarray]:
        """Per-thread node and edge visit masks (all False between calls)."""
        s = self._scratch
        if getattr(s, "mask_sizes", None) != (self.num_nodes, self.num_edges):
            s.mask_sizes = (self.num_nodes, self.num_edges)
            s.node_mask = np.zeros(self.num_nodes, dtype=bool)
            s.edge_mask = np.zeros(self.num_edges, dtype=bool)
        return s.node_mask, s.edge_mask

    def _incident_edges(self, nodes: np.ndarray, *, reverse: bool) -> np.ndarray:
        """Ids of the edges leaving (entering, when ``reverse``) ``nodes``, node by node."""
        indptr = self.in_indptr if reverse else self.out_indptr
        starts = indptr[nodes]
        pos = _range_positions(starts, indptr[nodes + 1] - starts)
        return self.in_order[pos].astype(np.int64) if reverse else pos

    def _bfs_step(self, frontier: np.ndarray, directed: bool) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """All (edge, next node, forward flag) leaving ``frontier`` (both ways if undirected)."""
        e_out = self._incident_edges(frontier, reverse=False)
        parts_e, parts_n, parts_f = [e_out], [self.tails[e_out].astype(np.int64)], [
            np.ones(len(e_out), bool)]
        if not directed:
            e_in = self._incident_edges(frontier, reverse=True)
            parts_e.append(e_in)
            parts_n.append(self.heads[e_in].astype(np.int64))
            parts_f.append(np.zeros(len(e_in), bool))
        return np.concatenate(parts_e), np.concatenate(parts_n), np.concatenate(parts_f)

    def shortest_paths_ids(
        self,
        sources: np.ndarray,
        targets: np.ndarray,
        *,
        max_hops: int = 3,
        directed: bool = False,
        max_paths: int | None = None,
    ) -> list[tuple[np.ndarray, np.ndarray, np.ndarray]]:
        """One shortest path (≤ ``max_hops`` edges) to each reachable target from the nearest source.

        A multi-source breadth-first search; ties between equally short paths are broken by the
        lowest edge id, so results are deterministic. Targets that are themselves sources are
        skipped (a zero-length path says nothing). Returns ``(nodes, edges, forward)`` per path,
        ordered by length then target id.
        """
        sources = _unique(np.asarray(sources, dtype=np.int64))
        target_set = _unique(np.asarray(targets, dtype=np.int64))
        target_set = target_set[~_isin_sorted(target_set, sources)]
        if len(sources) == 0 or len(target_set) == 0 or max_hops < 1:
            return []
        dist, parent_edge, parent_fwd = self._scratch_arrays()
        touched = [sources]
        try:
            dist[sources] = 0
            frontier = sources
            for hop in range(1, max_hops + 1):
                e, nxt, fwd = self._bfs_step(frontier, directed)
                fresh = dist[nxt] < 0
                e, nxt, fwd = e[fresh], nxt[fresh], fwd[fresh]
                if len(nxt) == 0:
                    break
                order = np.lexsort((e, nxt))  # by node, then lowest edge id
                e, nxt, fwd = e[order], nxt[order], fwd[order]
                first = np.r_[True, nxt[1:] != nxt[:-1]]
                e, nxt, fwd = e[first], nxt[first], fwd[first]
                dist[nxt] = hop
                parent_edge[nxt] = e
                parent_fwd[nxt] = fwd
                touched.append(nxt)
                frontier = nxt
                if np.all(dist[target_set] >= 0):
                    break
            reached = target_set[dist[target_set] > 0]
            reached = reached[np.lexsort((reached, dist[reached]))]
            if max_paths is not None:
                reached = reached[:max_paths]
            paths = []
            for t in reached.tolist():
                length = int(dist[t])
                nodes = np.empty(length + 1, np.int64)
                edges = np.empty(length, np.int64)
                fwds = np.empty(length, bool)
                cur = t
                for i in range(length - 1, -1, -1):
                    nodes[i + 1] = cur
                    edge = int(parent_edge[cur])
                    edges[i] = edge
                    fwds[i] = bool(parent_fwd[cur])
                    cur = int(self.heads[edge]) if fwds[i] else int(self.tails[edge])
                nodes[0] = cur
                paths.append((nodes, edges, fwds))
            return paths
        finally:
            for arr in touched:
                dist[arr] = -1
                parent_edge[arr] = -1
                parent_fwd[arr] = False

    def k_hop_subgraph_ids(
        self,
        nodes: np.ndarray,
        *,
        hops: int = 2,
        direction: Direction = "both",
        max_edges: int | None = None,
    ) -> tuple[np.ndarray, np.ndarray]:
        """(node ids, edge ids) reached by a BFS of ``hops`` levels from ``nodes``.

        The edges are those traversed from nodes at distance < ``hops``; with ``max_edges`` the
        BFS stops adding edges once the cap is reached (nearer levels first, then lowest ids).
        """
        check_direction(direction)
        start = _unique(np.asarray(nodes, dtype=np.int64))
        node_seen, edge_seen = self._scratch_masks()
        node_levels = [start]
        edge_parts: list[np.ndarray] = []
        n_edges = 0
        try:
            node_seen[start] = True
            frontier = start
            for _ in range(hops):
                if len(frontier) == 0:
                    break
                parts = []
                if direction in ("out", "both"):
                    parts.append(self._incident_edges(frontier, reverse=False))
                if direction in ("in", "both"):
                    parts.append(self._incident_edges(frontier, reverse=True))
                e = np.concatenate(parts)
                e = _unique(e[~edge_seen[e]])
                if max_edges is not None and n_edges + len(e) > max_edges:
                    e = e[: max_edges - n_edges]
                edge_seen[e] = True
                edge_parts.append(e)
                n_edges += len(e)
                ends = np.concatenate([self.heads[e], self.tails[e]]).astype(np.int64)
                frontier = _unique(ends[~node_seen[ends]])
                node_seen[frontier] = True
                node_levels.append(frontier)
                if max_edges is not None and n_edges >= max_edges:
                    break
        finally:  # leave the scratch masks clean (cost O(visited), not O(graph))
            for part in edge_parts:
                edge_seen[part] = False
            for level in node_levels:
                node_seen[level] = False
        edges = np.sort(np.concatenate(edge_parts)) if edge_parts else np.empty(0, np.int64)
        return np.sort(np.concatenate(node_levels)), edges

    # ------------------------------------------------------------------ name-level (GraphStore)
    def edge_triples(self, edge_ids: Iterable[int]) -> list[Triple]:
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
        if relations is None and type(nodes) in (list, tuple) and len(nodes) == 1:
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

    def _adjacency_rows(self) -> tuple[np.ndarray, np.ndarray]:
        """``(adj_ptr, adj_rows)`` for single-node lookups in plain Python, built on first use
        (16 bytes per edge end, 8 per node): the edges touching node ``v``, each once (a
        self-loop too), in edge-id order, are the rows ``adj_rows[adj_ptr[v]:adj_ptr[v+1]]``
        of ``(head, rel, tail, edge id)``. One contiguous slice then gives a node's outgoing
        and incoming edges, which would otherwise take several slices and a fancy index (slow
        for a few elements). Edge-id order is also index order within an *(node, rel)* block
        in both directions (edges are sorted by head, relation, tail)."""
        tables = self._adj_tables
        if tables is None:
            n, e = self.num_nodes, self.num_edges
            not_loop = np.flatnonzero(self.heads != self.tails)
            owner = np.concatenate((self.heads, self.tails[not_loop])).astype(np.int64)
            edge = np.concatenate((np.arange(e, dtype=np.int64), not_loop))
            ptr = np.zeros(n + 1, dtype=np.int64)
            np.cumsum(np.bincount(owner, minlength=n), out=ptr[1:])
            if e and n * e < _INT64_LIMIT:  # sort by (owner, edge) as one packed int64 key
                owner *= e
                owner += edge
                owner.sort()
                edge = owner % e
            else:
                edge = edge[np.lexsort((edge, owner))]
            del owner
            rows = np.stack((self.heads[edge], self.rels[edge], self.tails[edge],
                             edge.astype(INDEX_DTYPE)), axis=1)
            tables = self._adj_tables = (ptr, rows)
        return tables

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
        """Walks from ``sources`` along ``path`` (``"r1 -> r2_inv"`` or steps). Unknown relation: []."""
        id_steps = self._id_steps(path, default_direction)
        if id_steps is None:
            return []
        if type(sources) in (list, tuple) and len(sources) == 1:  # one source: plain Python
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
