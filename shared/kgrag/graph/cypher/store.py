"""GraphStore operations as parameterised Cypher, shared by the Neo4j and FalkorDB stores.

:class:`CypherGraphStore` implements every :class:`~kgrag.graph.base.GraphStore` operation on
top of two primitives a backend provides: run a read-only query and return rows
(``_read``), and run a write query (``_write``, used only by loading). Node names, relation
names and limits always travel as query *parameters*. The only text put into a query is
identifiers, which Cypher cannot parameterise: the node label and name property (from the
store's configuration) and relationship types, which are checked against the relation list read
from the database and then backtick-quoted.

How a graph is stored (configurable, because graphs in Neo4j differ):

* nodes carry ``node_label`` (default ``Entity``; ``None`` means any node) and their name in
  ``name_property`` (default ``name``); a node without that property is invisible;
* an edge is a relationship whose *type* is the relation name (default), or, with
  ``relation_property="relation"``, a relationship of type ``relationship_type`` (default
  ``RELATED``) holding the relation name in that property.

Results equal the in-memory :class:`~kgrag.graph.memory.KnowledgeGraph`'s, with one rule for
order: where the in-memory graph orders or caps by integer id (``one_hop(limit=...)``,
``follow_path`` fan-out, shortest-path tie-breaks, ``k_hop_subgraph(max_edges=...)``, schema
examples), a database store orders by *name* (code-point order; edges by
``(head, relation, tail)``). The two coincide when the in-memory graph's ids are in name order
(as after :func:`kgrag.graph.cypher.store.name_ordered`); otherwise capped results may pick
different, equally valid, edges. Uncapped results are the same sets.

Multi-step operations (metapath walks, shortest paths, k-hop subgraphs) run one query per hop on
the whole frontier (in chunks of ``batch_size`` names), and the client keeps the walks, so the
database does the edge expansion and the fan-out caps while results stay exact.
"""

from __future__ import annotations

import logging
import math
import threading
from dataclasses import dataclass
from typing import Any, Callable, Iterable, Iterator, Mapping, Sequence, TypeVar

from kgrag.context.types import Path, Triple
from kgrag.errors import GraphDatabaseError, QueryParameterError, QueryTimeoutError
from kgrag.graph.annotations import GraphAnnotations
from kgrag.graph.base import Direction, PathStep, check_direction, parse_relation_path
from kgrag.graph.cypher.budget import MAX_RANGE_ELEMENTS, prepare_untrusted_query
from kgrag.graph.cypher.result_budget import MAX_RESULT_BYTES
from kgrag.graph.memory import KnowledgeGraph
from kgrag.text.names import normalize_name

log = logging.getLogger(__name__)

Row = list  # one result row, values in RETURN order
_UNSET: Any = object()  # "not given": a data model's value applies
T = TypeVar("T")
#: what :meth:`CypherGraphStore.best_pairs` has the database score a pair with an end lacking a
#: vector: above any cosine sum (at most 2), so such pairs sort first and pass any threshold
MISSING_VECTOR_SCORE = 1.0e6


def _pair_score(value: Any) -> float:
    """A database pair score; NaN for :data:`MISSING_VECTOR_SCORE` (an end has no vector; a
    relation's score of at most 1 may have been added to it)."""
    score = float(value)
    return math.nan if score >= MISSING_VECTOR_SCORE / 2 else score


class CypherRows(list):
    """Rows of :meth:`CypherGraphStore.run_cypher` (a ``list`` of dicts); ``truncated`` is
    ``True`` when the query matched more than ``limit`` rows and only the first were kept."""

    truncated: bool = False
    limit: int = 0


def _nul_strings(value: Any) -> Iterator[str]:
    if isinstance(value, str):
        if "\x00" in value:
            yield value
    elif isinstance(value, Mapping):
        for k, v in value.items():
            yield from _nul_strings(k)
            yield from _nul_strings(v)
    elif isinstance(value, (list, tuple, set, frozenset)):
        for v in value:
            yield from _nul_strings(v)


def refuse_nul_parameters(params: Mapping[str, Any] | None) -> None:
    """Raise :class:`~kgrag.errors.QueryParameterError` (a :class:`GraphDatabaseError`) when a
    parameter string holds NUL (U+0000).

    FalkorDB reads parameters as C strings: over Bolt a NUL silently cuts the value
    (``"ab\\x00cd"`` arrives as ``"ab"``), over its Redis protocol it cuts the whole query.
    Refusing is the only way not to answer a different question than the one asked.
    """
    bad = next(_nul_strings(dict(params or {})), None)
    if bad is not None:
        raise QueryParameterError(
            f"a query parameter holds a NUL character, which the server would cut the value at: "
            f"{bad[:60]!r}")


def call_with_deadline(fn: Callable[[], T], seconds: float | None, what: str,
                       on_timeout: Callable[[], None] | None = None) -> T:
    """Run ``fn`` in a daemon thread; raise :class:`QueryTimeoutError` after ``seconds``.

    Database clients wait on their socket: the Bolt driver has no read timeout, and a server can
    be slow to notice its own timeout (FalkorDB checks it between operations). This bounds the
    caller's wait. ``on_timeout`` is called before raising, to stop the abandoned thread (the
    stores shut its socket down: :meth:`~kgrag.graph.cypher.result_budget.BudgetedSocket.cancel`);
    without it the thread ends when its socket does.
    """
    if seconds is None:
        return fn()
    box: dict[str, Any] = {}

    def target() -> None:
        try:
            box["value"] = fn()
        except BaseException as exc:  # handed to the caller below
            box["error"] = exc

    worker = threading.Thread(target=target, name="kgrag-graph-query", daemon=True)
    worker.start()
    worker.join(seconds)
    if worker.is_alive():
        if on_timeout is not None:
            on_timeout()
        raise QueryTimeoutError(f"{what}: no answer within {seconds:.1f} s")
    if "error" in box:
        raise box["error"]
    return box["value"]


def name_ordered(kg: KnowledgeGraph) -> KnowledgeGraph:
    """A copy of ``kg`` whose node and relation ids follow name order.

    On such a graph the in-memory store's id-ordered caps and tie-breaks coincide with a
    database store's name-ordered ones, so results are identical even when capped.
    """
    node_order = sorted(range(kg.num_nodes), key=kg.node_names.__getitem__)
    rel_order = sorted(range(kg.num_relations), key=kg.relation_names.__getitem__)
    node_new = [0] * kg.num_nodes
    for new, old in enumerate(node_order):
        node_new[old] = new
    rel_new = [0] * kg.num_relations
    for new, old in enumerate(rel_order):
        rel_new[old] = new
    import numpy as np

    node_map, rel_map = np.asarray(node_new, np.int64), np.asarray(rel_new, np.int64)
    return KnowledgeGraph(
        [kg.node_names[i] for i in node_order], [kg.relation_names[i] for i in rel_order],
        node_map[kg.heads], rel_map[kg.rels], node_map[kg.tails],
        node_descriptions=kg.node_descriptions, relation_descriptions=kg.relation_descriptions,
        aliases=kg.aliases, relation_labels=kg.relation_labels, annotations=kg.annotations,
    )


@dataclass(frozen=True)
class SearchIndex:
    """A full-text or vector index over the store's node names, found in the database.

    ``kind`` is ``"fulltext"`` or ``"vector"``; ``name`` is what the query procedure takes (a
    Neo4j index name; a FalkorDB label); ``label`` / ``property`` are what it covers;
    ``options`` holds backend details (e.g. a FalkorDB vector index's similarity function).
    """

    kind: str
    name: str
    label: str | None
    property: str
    backend: str
    options: tuple[tuple[str, Any], ...] = ()

    def describe(self) -> str:
        """``"<backend>-<kind>:<name>"``, e.g. ``"neo4j-fulltext:entity_names"``."""
        return f"{self.backend}-{self.kind}:{self.name}"


class CypherGraphStore:
    """Base class of the database stores; subclasses supply ``_read``, ``_write``, ``_quote``.

    Parameters (all keyword):
        node_label: label of entity nodes, or ``None`` for every node.
        name_property: node property holding the entity name.
        relation_property: ``None`` (the relationship type is the relation name), or the
            relationship property holding the relation name.
        relationship_type: the one relationship type used when ``relation_property`` is set.
        batch_size: names sent per query when a frontier is large.
        timeout: seconds a graph operation may run (server-side where supported).
        relation_descriptions: optional ``{relation: text}`` shown by :meth:`schema_summary`.
        relation_labels: optional ``{relation: label or labels}``: what embedders read for a
            relation (:func:`kgrag.text.relations.relation_texts`).
        data_model: the layout of a graph a framework wrote (:mod:`kgrag.graph.data_models`):
            ``"kgrag"``, ``"langchain"`` (``add_graph_documents(baseEntityLabel=True)``),
            ``"langchain_typed"`` (without it), ``"llama_index"`` (``PropertyGraphIndex``), or
            ``"auto"`` to detect it from the database's labels. It sets ``node_label``,
            ``name_property`` and ``exclude_labels`` unless those are given too.
        exclude_labels: labels of nodes that are never entities (source ``Document`` and
            ``Chunk`` nodes in the frameworks' layouts); edges to them are not facts either.
    """

    supports_cypher = True
    #: where the store connects, for messages (set by the backends' constructors)
    _where_text: str
    #: the :class:`~kgrag.graph.cypher.load.LoadSummary` of ``to_neo4j`` / ``to_falkordb``
    load_summary: Any
    backend = "cypher"
    #: Seconds the client waits beyond a query's timeout before it gives up on the server.
    client_grace_seconds = 5.0

    def __init__(
        self,
        *,
        node_label: str | None | Any = _UNSET,
        name_property: str | Any = _UNSET,
        relation_property: str | None = None,
        relationship_type: str = "RELATED",
        batch_size: int = 1000,
        timeout: float | None = 60.0,
        relation_descriptions: Mapping[str, str] | None = None,
        relation_labels: Mapping[str, str | Sequence[str]] | None = None,
        data_model: str | None = None,
        exclude_labels: Sequence[str] | Any = _UNSET,
    ) -> None:
        if batch_size < 1:
            raise ValueError("batch_size must be >= 1")
        self.timeout = timeout
        model = None
        if data_model == "auto":
            from kgrag.graph.data_models import detect_data_model

            model = detect_data_model(self._read, self._quote)
        elif data_model is not None:
            from kgrag.graph.data_models import preset

            model = preset(data_model)
        self.data_model = model.name if model is not None else "kgrag"
        if node_label is _UNSET:
            node_label = model.node_label if model is not None else "Entity"
        if name_property is _UNSET:
            name_property = model.name_property if model is not None else "name"
        if exclude_labels is _UNSET:
            exclude_labels = model.exclude_labels if model is not None else ()
        self.exclude_labels: tuple[str, ...] = tuple(exclude_labels)
        self._exclude = [self._quote(label) for label in self.exclude_labels]
        self.relation_labels: dict[str, list[str]] = {
            str(r): [v] if isinstance(v, str) else list(v)
            for r, v in (relation_labels or {}).items()}
        self.node_label = node_label
        self.name_property = name_property
        self.relation_property = relation_property
        self.relationship_type = relationship_type
        self.batch_size = batch_size
        self.relation_descriptions: dict[str, str] = dict(relation_descriptions or {})
        #: a database holds no aliases or annotations of its own (the GraphStore protocol's
        #: empty defaults); link through its search indexes (:mod:`kgrag.linking.database`)
        self.aliases: dict[str, list[str]] = {}
        self.annotations = GraphAnnotations()
        self._label = f":{self._quote(node_label)}" if node_label else ""
        self._prop = self._quote(name_property)
        self._rel_prop = self._quote(relation_property) if relation_property else None
        self._rel_type = self._quote(relationship_type) if relation_property else None
        self._relation_counts_cache: dict[str, int] | None = None
        self._relation_types_cache: set[str] | None = None
        self._relation_present_cache: list[str] | None = None

    # ------------------------------------------------------------------ backend hooks
    def _read(self, query: str, params: Mapping[str, Any] | None = None,
              timeout: float | None = None) -> list[Row]:
        """Run a read-only query in a read transaction; return rows as lists."""
        raise NotImplementedError

    def _write(self, query: str, params: Mapping[str, Any] | None = None) -> dict[str, int]:
        """Run a write query (loading only); return ``nodes_created``/``relationships_created``."""
        raise NotImplementedError

    def _run_user_query(self, query: str, params: Mapping[str, Any], limit: int,
                        timeout: float | None, max_bytes: int | None) -> list[dict[str, Any]]:
        """Run untrusted read-only ``query``: at most ``limit`` rows, reading stopped with
        :class:`~kgrag.errors.ResultTooLargeError` past ``max_bytes`` received (``None``: no
        byte limit), and the reader stopped when the deadline passes."""
        raise NotImplementedError

    def _quote(self, identifier: str) -> str:
        """Backtick-quote a label / type / property name (the backend decides what it accepts)."""
        raise NotImplementedError

    def ensure_name_index(self) -> str:
        """Create an index (or uniqueness constraint) on the name property; say which."""
        raise NotImplementedError

    def close(self) -> None:
        """Release the connection if this store opened it."""

    # ------------------------------------------------------------------ search indexes
    def search_indexes(self) -> list[SearchIndex]:
        """Usable full-text / vector indexes on the node label's name property (none here).

        Backends that can query such indexes override this, :meth:`fulltext_search` and
        :meth:`vector_search`; :func:`kgrag.linking.database.linker_for_store` uses them.
        """
        return []

    def fulltext_search(self, index: SearchIndex, tokens: Sequence[str], limit: int
                        ) -> list[tuple[str, float]]:
        """``(name, raw server score)`` of the best ``limit`` nodes for word ``tokens``."""
        raise GraphDatabaseError(f"{type(self).__name__} has no full-text search")

    def vector_search(self, index: SearchIndex, vector: Sequence[float], k: int, *,
                      breadth: int | None = None) -> list[tuple[str, float]]:
        """``(name, similarity in [0, 1])`` of the ``k`` nearest nodes to ``vector``.

        ``breadth``: ask the index for ``max(k, breadth)`` neighbours and return the best ``k``
        of them. An HNSW index's search beam is the larger of its ``efRuntime`` and the number
        asked for (FalkorDB; Neo4j's beam is the number asked for), so a wider ask finds more
        of the true nearest -- at 243k random 64-d vectors recall@16 rose from 0.80 (asking 16,
        efRuntime 100) to 0.99 (asking 1,600): docs/graph-databases.md. The database ranks
        and cuts; only ``k`` rows come back."""
        raise GraphDatabaseError(f"{type(self).__name__} has no vector search")

    def __enter__(self) -> "CypherGraphStore":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    # ------------------------------------------------------------------ query fragments
    def _node(self, var: str, key: str | None = None) -> str:
        """``(var:Label {name: key})`` or ``(var:Label)``."""
        if key is None:
            return f"({var}{self._label})"
        return f"({var}{self._label} {{{self._prop}: {key}}})"

    def _anchor(self) -> str:
        """``UNWIND $names AS nm`` + an index lookup of node ``n`` by name.

        The lookup is its own ``MATCH`` followed by ``WITH``, so planners (FalkorDB's above
        all) start from the name index instead of scanning the label of the other end.
        """
        return (f"UNWIND $names AS nm MATCH {self._node('n', 'nm')}"
                f"{self._where(self._not_excluded('n'))} WITH n, nm ")

    def _rel(self, var: str, relations: Sequence[str] | None, param: str = "rels"
             ) -> tuple[str, str | None]:
        """Relationship pattern and its WHERE condition for the relation filter (None = any);
        in relation-property mode the condition reads the relations from ``$param``."""
        if self._rel_prop is None:
            if relations is None:
                return f"[{var}]", None
            return f"[{var}:{'|'.join(self._quote(r) for r in relations)}]", None
        cond = None if relations is None else f"{var}.{self._rel_prop} IN ${param}"
        return f"[{var}:{self._rel_type}]", cond

    def _rel_name(self, var: str) -> str:
        return f"type({var})" if self._rel_prop is None else f"{var}.{self._rel_prop}"

    def _has_name(self, *variables: str) -> str:
        """``v.name IS NOT NULL`` (and ``NOT v:Excluded`` per excluded label) for each var."""
        return " AND ".join(f"{v}.{self._prop} IS NOT NULL" + "".join(
            f" AND NOT {v}:{label}" for label in self._exclude) for v in variables)

    def _not_excluded(self, var: str) -> str | None:
        return " AND ".join(f"NOT {var}:{label}" for label in self._exclude) or None

    @staticmethod
    def _where(*conditions: str | None) -> str:
        conds = [c for c in conditions if c]
        return f" WHERE {' AND '.join(conds)}" if conds else ""

    def _names(self, names: Iterable[str]) -> list[str]:
        """Normalised, de-duplicated names (first occurrence order)."""
        if isinstance(names, str):
            raise TypeError("expected an iterable of names, got one string; wrap it in a list")
        return list(dict.fromkeys(normalize_name(n) for n in names))

    def _chunks(self, names: Sequence[str]) -> Iterator[list[str]]:
        for i in range(0, len(names), self.batch_size):
            yield list(names[i:i + self.batch_size])

    # ------------------------------------------------------------------ relations
    def _relation_counts(self) -> dict[str, int]:
        """``{relation: edge count}`` read from the data (cached; :meth:`refresh` clears it)."""
        if self._relation_counts_cache is None:
            counts = self._typed_relation_counts() if self._rel_prop is None else None
            if counts is None:  # one grouped scan (relation property mode, or no procedure)
                pattern, _ = self._rel("e", None)
                rows = self._read(
                    f"MATCH {self._node('h')}-{pattern}->{self._node('t')}"
                    f"{self._where(self._has_name('h', 't'))} "
                    f"RETURN {self._rel_name('e')} AS r, count(*) AS c")
                counts = {str(r): int(c) for r, c in rows if r is not None}
            self._relation_counts_cache = counts
        return self._relation_counts_cache

    def _typed_relation_counts(self) -> dict[str, int] | None:
        """Per relationship type, one count over a typed pattern.

        Much faster than grouping one untyped scan by ``type(e)`` (FalkorDB resolves an untyped
        edge against every relation matrix: 7 s vs 0.15 s per 100k edges). ``None`` when the
        server has no ``db.relationshipTypes()``.
        """
        try:
            types = [str(r[0]) for r in self._read("CALL db.relationshipTypes()")]
        except GraphDatabaseError as exc:
            log.info("db.relationshipTypes() unavailable (%s); counting in one scan", exc)
            return None
        counts: dict[str, int] = {}
        for rel in types:
            try:
                quoted = self._quote(rel)
            except ValueError as exc:
                log.warning("relationship type %r skipped: %s", rel, exc)
                continue
            rows = self._read(f"MATCH {self._node('h')}-[e:{quoted}]->{self._node('t')}"
                              f"{self._where(self._has_name('h', 't'))} RETURN count(e)")
            if rows and int(rows[0][0]):
                counts[rel] = int(rows[0][0])
        return counts

    def _relation_types(self) -> set[str]:
        """Relation names the database knows (cached): what a query may name.

        Cheap: ``db.relationshipTypes()`` (or the distinct relation property values of the one
        relationship type). A name here may still have no edge between entity nodes; querying
        it then finds nothing, exactly like an unknown relation in memory. Exact per-relation
        counts (:meth:`relation_counts`) need a scan and are computed only when asked for.
        """
        if self._relation_types_cache is None:
            types: set[str] | None = None
            try:
                if self._rel_prop is None:
                    types = set()
                    for (rel,) in self._read("CALL db.relationshipTypes()"):
                        try:
                            self._quote(str(rel))
                        except ValueError as exc:
                            log.warning("relationship type %r skipped: %s", rel, exc)
                            continue
                        types.add(str(rel))
                else:
                    types = {str(r[0]) for r in self._read(
                        f"MATCH ()-[e:{self._rel_type}]->() "
                        f"RETURN DISTINCT e.{self._rel_prop}") if r[0] is not None}
            except GraphDatabaseError as exc:
                log.info("relation types from a scan (%s)", exc)
            self._relation_types_cache = types if types is not None else set(
                self._relation_counts())
        return self._relation_types_cache

    def _relation_present(self) -> list[str]:
        """Relation names with at least one edge between entity nodes (sorted, cached)."""
        if self._relation_present_cache is None:
            if self._relation_counts_cache is not None:
                present = set(self._relation_counts_cache)
            else:
                present = set()
                for rel in self._relation_types():
                    pattern, cond = self._rel("e", [rel])
                    if self._read(f"MATCH {self._node('h')}-{pattern}->{self._node('t')}"
                                  f"{self._where(self._has_name('h', 't'), cond)} "
                                  f"RETURN 1 LIMIT 1", {"rels": [rel]}):
                        present.add(rel)
            self._relation_present_cache = sorted(present)
        return self._relation_present_cache

    def refresh(self) -> None:
        """Forget cached relation statistics (call after the database changed)."""
        self._relation_counts_cache = None
        self._relation_types_cache = None
        self._relation_present_cache = None

    def _known_relations(self, relations: Iterable[str]) -> list[str]:
        """The given relations that exist in the graph (unknown ones dropped, as in memory)."""
        if isinstance(relations, str):
            raise TypeError("expected an iterable of relation names, got one string")
        return sorted({normalize_name(r) for r in relations} & self._relation_types())

    # ------------------------------------------------------------------ GraphStore: basics
    def counts(self) -> dict[str, int]:
        rows = self._read(f"MATCH {self._node('n')}{self._where(self._has_name('n'))} "
                          f"RETURN count(DISTINCT n.{self._prop})")
        rel = self._relation_counts()
        return {"nodes": int(rows[0][0]), "edges": sum(rel.values()), "relations": len(rel)}

    def stored_counts(self) -> tuple[int, int]:
        """``(labelled nodes, relationships)`` as the database counts them, without scanning:
        what ``kgrag load-db`` reports after loading. :meth:`counts` checks every edge's ends
        (named entity nodes, per relation) -- at 10M edges on FalkorDB that took over 15
        minutes, these two counts well under a second."""
        edges = self._read("MATCH ()-[e]->() RETURN count(e)")
        return self.stored_node_count(), int(edges[0][0])

    def stored_node_count(self) -> int:
        """The labelled nodes as the database counts them (the first of :meth:`stored_counts`),
        without counting the relationships too."""
        return int(self._read(f"MATCH {self._node('n')} RETURN count(n)")[0][0])

    def has_node(self, name: str) -> bool:
        rows = self._read(f"MATCH {self._node('n', '$name')}"
                          f"{self._where(self._not_excluded('n'))} RETURN n.{self._prop} LIMIT 1",
                          {"name": normalize_name(name)})
        return bool(rows)

    def existing_nodes(self, names: Iterable[str]) -> list[str]:
        """The given names that are nodes of the graph (input order, normalised)."""
        wanted = self._names(names)
        found: set[str] = set()
        for chunk in self._chunks(wanted):
            found.update(r[0] for r in self._read(
                f"UNWIND $names AS nm MATCH {self._node('n', 'nm')}"
                f"{self._where(self._not_excluded('n'))} RETURN DISTINCT nm",
                {"names": chunk}))
        return [n for n in wanted if n in found]

    def iter_node_names(self, batch_size: int = 10_000) -> Iterator[str]:
        raise NotImplementedError

    def list_relations(self) -> list[str]:
        return list(self._relation_present())

    def relation_counts(self) -> dict[str, int]:
        return dict(self._relation_counts())

    # ------------------------------------------------------------------ one-hop edges
    def _edges(self, names: Sequence[str], direction: Direction, relations: list[str] | None,
               limit: int | None) -> list[tuple[str, str, str]]:
        """Distinct ``(head, relation, tail)`` touching ``names``, name-sorted, first ``limit``."""
        if not names or relations == [] or limit == 0:
            return []
        pattern, rel_cond = self._rel("e", relations)
        tail = " ORDER BY h, r, t LIMIT $limit" if limit is not None else ""
        queries = []
        if direction in ("out", "both"):
            queries.append(f"{self._anchor()}MATCH (n)-{pattern}->"
                           f"{self._node('m')}{self._where(self._has_name('m'), rel_cond)} "
                           f"RETURN DISTINCT nm AS h, {self._rel_name('e')} AS r, "
                           f"m.{self._prop} AS t{tail}")
        if direction in ("in", "both"):
            queries.append(f"{self._anchor()}MATCH {self._node('m')}-{pattern}->(n)"
                           f"{self._where(self._has_name('m'), rel_cond)} "
                           f"RETURN DISTINCT m.{self._prop} AS h, {self._rel_name('e')} AS r, "
                           f"nm AS t{tail}")
        found: set[tuple[str, str, str]] = set()
        for chunk in self._chunks(list(names)):
            for query in queries:
                for h, r, t in self._read(query, {"names": chunk, "rels": relations,
                                                  "limit": limit}):
                    found.add((h, r, t))
        edges = sorted(found)
        return edges if limit is None else edges[:limit]

    def one_hop(self, nodes: Iterable[str], *, direction: Direction = "both",
                relations: Iterable[str] | None = None, limit: int | None = None) -> list[Triple]:
        """Edges touching ``nodes``, sorted by (head, relation, tail) name; unknown ones skipped."""
        check_direction(direction)
        rels = None if relations is None else self._known_relations(relations)
        return [Triple(*e) for e in self._edges(self._names(nodes), direction, rels, limit)]

    # ------------------------------------------------------------------ metapaths
    def _neighbors(self, names: Sequence[str], relation: str, reverse: bool,
                   cap: int | None) -> dict[str, list[str]]:
        """Per node: name-sorted distinct neighbours over ``relation`` (first ``cap`` of them)."""
        pattern, rel_cond = self._rel("e", [relation])
        if reverse:
            match = f"{self._node('m')}-{pattern}->(n)"
        else:
            match = f"(n)-{pattern}->{self._node('m')}"
        capped = "xs[..$cap]" if cap is not None else "xs"
        query = (f"{self._anchor()}MATCH {match}{self._where(self._has_name('m'), rel_cond)} "
                 f"WITH DISTINCT nm, m.{self._prop} AS x ORDER BY nm, x "
                 f"WITH nm, collect(x) AS xs RETURN nm, {capped} AS xs")
        out: dict[str, list[str]] = {}
        for chunk in self._chunks(list(names)):
            for nm, xs in self._read(query, {"names": chunk, "rels": [relation], "cap": cap}):
                out[nm] = sorted(xs)
        return out

    def follow_path(self, sources: Iterable[str], path: str | Sequence[str | PathStep], *,
                    fan_out: int | None = None, max_paths: int | None = None,
                    default_direction: Direction = "out") -> list[Path]:
        """Walks from ``sources`` along ``path``; same rules as the in-memory store.

        Sources are taken in name order; at each step a walk continues along its node's
        neighbours in name order (outgoing before incoming for a ``"both"`` step), at most
        ``fan_out`` of them; after each step only the first ``max_paths`` walks are kept.
        An unknown relation gives ``[]``.
        """
        steps = parse_relation_path(path, default_direction=default_direction)
        known = self._relation_types()
        steps = [PathStep(normalize_name(s.relation), s.direction) for s in steps]
        if any(s.relation not in known for s in steps):
            return []
        walks: list[tuple[tuple[str, ...], tuple[bool, ...]]] = [
            ((s,), ()) for s in sorted(self._names(sources))]
        for step in steps:
            if not walks:
                break
            frontier = sorted({nodes[-1] for nodes, _ in walks})
            out_map = (self._neighbors(frontier, step.relation, False, fan_out)
                       if step.direction in ("out", "both") else {})
            in_map = (self._neighbors(frontier, step.relation, True, fan_out)
                      if step.direction in ("in", "both") else {})
            extended: list[tuple[tuple[str, ...], tuple[bool, ...]]] = []
            for nodes, fwd in walks:
                options = [(x, True) for x in out_map.get(nodes[-1], ())]
                options += [(x, False) for x in in_map.get(nodes[-1], ())]
                if fan_out is not None:
                    options = options[:fan_out]
                extended.extend((nodes + (x,), fwd + (f,)) for x, f in options)
                if max_paths is not None and len(extended) >= max_paths:
                    break
            walks = extended if max_paths is None else extended[:max_paths]
        relations = tuple(s.relation for s in steps)
        return [Path(nodes, relations, fwd) for nodes, fwd in walks if len(fwd) == len(steps)]

    # ------------------------------------------------------------------ shortest paths
    def _parent_edges(
            self, frontier: Sequence[str], directed: bool, only: Sequence[str] | None,
    ) -> dict[str, tuple[tuple[str, str, str], bool, str]]:
        """For each node next to ``frontier``: its lowest connecting edge, direction, and parent."""
        pattern, _ = self._rel("e", None)
        restrict = f"m.{self._prop} IN $only" if only is not None else None
        out_q = (f"{self._anchor()}MATCH (n)-{pattern}->{self._node('m')}"
                 f"{self._where(self._has_name('m'), restrict)} "
                 f"WITH m.{self._prop} AS x, nm, {self._rel_name('e')} AS r ORDER BY x, nm, r "
                 f"WITH x, collect([nm, r])[0] AS best RETURN x, best[0], best[1]")
        in_q = (f"{self._anchor()}MATCH {self._node('m')}-{pattern}->(n)"
                f"{self._where(self._has_name('m'), restrict)} "
                f"WITH m.{self._prop} AS x, nm, {self._rel_name('e')} AS r ORDER BY x, r, nm "
                f"WITH x, collect([r, nm])[0] AS best RETURN x, best[0], best[1]")
        best: dict[str, tuple[tuple[str, str, str], bool, str]] = {}

        def offer(x: str, edge: tuple[str, str, str], forward: bool, parent: str) -> None:
            if x not in best or edge < best[x][0]:
                best[x] = (edge, forward, parent)

        for chunk in self._chunks(list(frontier)):
            params = {"names": chunk, "only": list(only) if only is not None else None}
            for x, parent, r in self._read(out_q, params):
                offer(x, (parent, r, x), True, parent)
            if not directed:
                for x, r, parent in self._read(in_q, params):
                    offer(x, (x, r, parent), False, parent)
        return best

    #: Largest target neighbourhood used to prune the next-to-last BFS level.
    near_targets_cap = 5000

    def _near_targets(self, targets: list[str], directed: bool) -> list[str] | None:
        """Targets and the nodes one edge before them, or ``None`` when that set is too large.

        Only these nodes can matter at the next-to-last BFS level (a node found there that is
        not next to a target cannot reach one in the last hop), so the database returns just
        them instead of the whole level.
        """
        edges = self._edges(sorted(targets), "in" if directed else "both", None,
                            self.near_targets_cap + 1)
        if len(edges) > self.near_targets_cap:
            return None
        wanted = set(targets)
        near = set(targets)
        for h, _, t in edges:
            if t in wanted:
                near.add(h)
            if h in wanted and not directed:
                near.add(t)
        return sorted(near)

    def shortest_paths(self, sources: Iterable[str], targets: Iterable[str], *, max_hops: int = 3,
                       directed: bool = False, max_paths: int | None = None) -> list[Path]:
        """One shortest path to each reachable target, by a breadth-first search run hop by hop.

        Same rules as the in-memory store: ties are broken by the lowest connecting edge
        (name order of ``(head, relation, tail)``), targets that are sources are skipped, and
        paths come ordered by length, then target name.
        """
        srcs = set(self._names(sources))
        tgts = set(self._names(targets)) - srcs
        if not srcs or not tgts or max_hops < 1:
            return []
        dist = {s: 0 for s in srcs}
        parent: dict[str, tuple[tuple[str, str, str], bool, str]] = {}
        frontier = sorted(srcs)
        for hop in range(1, max_hops + 1):
            only = None
            if hop == max_hops:
                only = sorted(t for t in tgts if t not in dist)
            elif hop == max_hops - 1:
                only = self._near_targets([t for t in tgts if t not in dist], directed)
            best = self._parent_edges(frontier, directed, only)
            fresh = {x: v for x, v in best.items() if x not in dist}
            if not fresh:
                break
            for x, v in fresh.items():
                dist[x] = hop
                parent[x] = v
            frontier = sorted(fresh)
            if all(t in dist for t in tgts):
                break
        reached = sorted((dist[t], t) for t in tgts if t in dist)
        if max_paths is not None:
            reached = reached[:max_paths]
        paths = []
        for length, target in reached:
            nodes, rels, fwds = [target], [], []
            cur = target
            for _ in range(length):
                edge, forward, prev = parent[cur]
                rels.append(edge[1])
                fwds.append(forward)
                nodes.append(prev)
                cur = prev
            paths.append(Path(tuple(reversed(nodes)), tuple(reversed(rels)),
                              tuple(reversed(fwds))))
        return paths

    # ------------------------------------------------------------------ subgraphs and degrees
    def k_hop_subgraph(self, nodes: Iterable[str], *, hops: int = 2, direction: Direction = "both",
                       max_edges: int | None = None) -> list[Triple]:
        """Edges traversed by a BFS of ``hops`` levels; capped in level, then name order."""
        check_direction(direction)
        seen = set(self._names(nodes))
        frontier = sorted(seen)
        taken: set[tuple[str, str, str]] = set()
        for _ in range(hops):
            if not frontier:
                break
            room = None if max_edges is None else max_edges - len(taken)
            # at most len(taken) of the first room + len(taken) edges are already taken
            fetch = None if room is None else room + len(taken)
            level = [e for e in self._edges(frontier, direction, None, fetch) if e not in taken]
            if room is not None:
                level = level[:room]
            taken.update(level)
            ends = {h for h, _, _ in level} | {t for _, _, t in level}
            frontier = sorted(ends - seen)
            seen.update(frontier)
            if max_edges is not None and len(taken) >= max_edges:
                break
        return [Triple(*e) for e in sorted(taken)]

    # ------------------------------------------------------------------ scoring in the database
    @property
    def relations_are_types(self) -> bool:
        """Whether each relation is its own relationship type (not a property of one type): a
        typed pattern then reads only that relation's edges (one matrix in FalkorDB)."""
        return self._rel_prop is None

    # An untyped edge pattern that names its relationship (``-[e]-``) makes FalkorDB resolve
    # every edge against each relation matrix: the 256k edges into one hub's neighbours of a
    # 1M-edge graph took 20 s that way, and 0.1 s as node pairs (``-[]-``, no variable).
    def _pair_pattern(self) -> str:
        """A relationship pattern without a variable (node pairs, no edge resolved)."""
        return "[]" if self._rel_prop is None else f"[:{self._rel_type}]"

    def _cosine(self, var: str, prop: str, param: str) -> str:
        """Cypher for the cosine of node ``var``'s vector property ``prop`` and the list
        parameter ``param`` (a backend without vector functions raises)."""
        raise GraphDatabaseError(f"{type(self).__name__} has no vector functions")

    def neighbour_names(self, names: Iterable[str]) -> list[str]:
        """Sorted names of the nodes joined to ``names`` by an edge (either direction)."""
        found: set[str] = set()
        query = (f"{self._anchor()}MATCH (n)-{self._pair_pattern()}-{self._node('m')}"
                 f"{self._where(self._has_name('m'))} RETURN DISTINCT m.{self._prop}")
        for chunk in self._chunks(self._names(names)):
            found.update(str(row[0]) for row in self._read(query, {"names": chunk}))
        return sorted(found)

    def neighbour_counts(self, names: Iterable[str]) -> dict[str, int]:
        """Per known node, how many edges join it to named nodes (either direction), counted
        as node pairs (no edge resolved: a hub's count costs about what a small node's does).

        A cheap size estimate for planning a read (parallel edges between one pair may count
        once), not :meth:`degree`, which names every edge and so costs as much as reading them.
        """
        query = (f"{self._anchor()}MATCH (n)-{self._pair_pattern()}-{self._node('m')}"
                 f"{self._where(self._has_name('m'))} RETURN nm, count(m)")
        found: dict[str, int] = {}
        for chunk in self._chunks(self._names(names)):
            for nm, count in self._read(query, {"names": chunk}):
                found[str(nm)] = found.get(str(nm), 0) + int(count)
        return found

    def best_pairs(self, names: Iterable[str], vector: Sequence[float], prop: str, *,
                   limit: int | None = None, threshold: float | None = None
                   ) -> tuple[list[tuple[str, str, float]], float | None]:
        """Head-tail name pairs of the edges touching ``names``, scored in the database by
        ``cos(q, head) + cos(q, tail)`` over the stored ``prop`` vectors: the best ``limit``
        of each chunk of names and direction, or every pair scoring at least ``threshold``.
        Returns the pairs and a bound on the score of any pair not returned (``None``: every
        pair was returned; with ``threshold``, the pairs not returned score below it). Only
        these rows leave the database, never the neighbourhood.

        A pair with an end that has no ``prop`` vector scores NaN. The database ranks it above
        every scored pair (:data:`MISSING_VECTOR_SCORE`), so it is always returned: a caller
        learns from the pass itself, without a separate scan of the neighbourhood, that the
        database cannot rank these pairs."""
        rows, bound = self._scored_edges(names, vector, prop, None, limit, threshold)
        return [(h, t, score) for h, _, t, score in rows], bound  # one row per pair: r is ""

    def best_triples(self, names: Iterable[str], vector: Sequence[float], prop: str,
                     relation_scores: Mapping[str, float], *, limit: int | None = None,
                     threshold: float | None = None
                     ) -> tuple[list[tuple[str, str, str, float]], float | None]:
        """``(head, relation, tail, score)`` of the edges of the relations in
        ``relation_scores`` touching ``names``, scored in the database by ``cos(q, head) +
        cos(q, tail) + relation_scores[relation]``: the best ``limit`` of each chunk of names
        and direction, or every one scoring at least ``threshold``; and a bound on the score of
        any edge not returned, as :meth:`best_pairs`. One query reads a few relations' edges
        (FalkorDB: one matrix each) and names their relation among those few, where naming an
        untyped edge's relation looks in every relation's matrix. A triple with an end lacking
        a vector scores NaN and comes first, as in :meth:`best_pairs`."""
        if not relation_scores:
            return [], None
        return self._scored_edges(names, vector, prop, dict(relation_scores), limit, threshold)

    def _scored_edges(self, names: Iterable[str], vector: Sequence[float], prop: str,
                      relation_scores: dict[str, float] | None, limit: int | None,
                      threshold: float | None
                      ) -> tuple[list[tuple[str, str, str, float]], float | None]:
        """:meth:`best_pairs` (``relation_scores`` None: node pairs of any relation, relation
        ``""``) and :meth:`best_triples`."""
        q = self._quote(prop)
        params: dict[str, Any] = {"q": [float(x) for x in vector], "limit": limit,
                                  "threshold": threshold}
        if relation_scores is None:
            pattern, typed, relation, bonus = self._pair_pattern(), None, "''", ""
        else:
            edge, typed = self._rel("e", list(relation_scores))
            pattern, relation = edge, self._rel_name("e")
            params["rels"] = list(relation_scores)
            cases = []
            for i, (name, score) in enumerate(relation_scores.items()):
                params[f"rel{i}"], params[f"score{i}"] = name, float(score)
                cases.append(f"WHEN $rel{i} THEN $score{i}")
            bonus = f" + CASE {relation} {' '.join(cases)} END"

        # each named node's cosine once (a hub's 240k neighbours then cost one cosine each);
        # no DISTINCT: an unnamed pattern gives FalkorDB one row per node pair, and where a
        # backend gives one per parallel edge the client keeps one (DISTINCT doubled the pass)
        def scored(arrow: str, ends: str) -> str:
            return (f"WITH n, {self._cosine('n', q, 'q')} AS cn "
                    f"MATCH (n){arrow.format(pattern)}{self._node('m')}"
                    f"{self._where(typed, self._has_name('m'))} WITH {ends}, {relation} AS r, "
                    f"coalesce(cn + {self._cosine('m', q, 'q')}, {MISSING_VECTOR_SCORE})"
                    f"{bonus} AS s")

        matches = (scored("-{}->", "n AS h, m AS t"), scored("<-{}-", "m AS h, n AS t"))
        cut = " WHERE s >= $threshold" if threshold is not None else ""
        order = " ORDER BY s DESC, hn, r, tn LIMIT $limit" if limit is not None else ""
        found: dict[tuple[str, str, str], float] = {}
        bound: float | None = threshold
        for chunk in self._chunks(self._names(names)):
            for match in matches:
                rows = self._read(
                    f"{self._anchor()}{match} WITH h, t, r, s{cut} RETURN h.{self._prop} AS hn, "
                    f"r, t.{self._prop} AS tn, s{order}", {**params, "names": chunk})
                for h, r, t, score in rows:
                    found[(str(h), str(r), str(t))] = _pair_score(score)
                if limit is not None and len(rows) >= limit:  # the rest score at most this
                    last = _pair_score(rows[-1][3])
                    last = math.inf if math.isnan(last) else last
                    bound = last if bound is None else max(bound, last)
        return [(h, r, t, score) for (h, r, t), score in found.items()], bound

    def pair_relations(self, pairs: Sequence[tuple[str, str]],
                       relations: Sequence[str] | None = None) -> list[tuple[str, str, str]]:
        """Every distinct ``(head, relation, tail)`` of the given head-tail name pairs, of
        ``relations`` only when given (:meth:`grouped_pair_relations` with one group)."""
        return self.grouped_pair_relations([(relations, pairs)])

    def grouped_pair_relations(
            self, groups: Sequence[tuple[Sequence[str] | None, Sequence[tuple[str, str]]]]
    ) -> list[tuple[str, str, str]]:
        """Every distinct ``(head, relation, tail)`` of each group's head-tail name pairs, of
        the group's relations (``None``: any; empty: none), sorted; the groups go to the
        database together (``UNION ALL``), ``batch_size`` pairs per query.

        FalkorDB names an untyped edge's relation by looking in every relation's matrix
        (3,000 pairs of a 200-relation graph: 224 ms), while a few named relations cost a few
        lookups (1 relation: 35 ms, 16: 129 ms): so pairs that only some relations matter for
        are read with those named."""
        branches: list[tuple[Sequence[str] | None, list[tuple[str, str]]]] = []
        for relations, pairs in groups:
            if relations is not None and not relations:
                continue
            unique = list(dict.fromkeys((str(h), str(t)) for h, t in pairs))
            branches.extend((relations, unique[i:i + self.batch_size])
                            for i in range(0, len(unique), self.batch_size))
        found: set[tuple[str, str, str]] = set()
        parts: list[str] = []
        params: dict[str, Any] = {}
        size = 0
        for n, (relations, chunk) in enumerate(branches):
            pattern, cond = self._rel("e", None if relations is None else list(relations),
                                      f"rels{n}")
            parts.append(f"UNWIND $pairs{n} AS p MATCH {self._node('h', 'p[0]')}, "
                         f"{self._node('t', 'p[1]')} WITH h, t MATCH (h)-{pattern}->(t)"
                         f"{self._where(cond)} RETURN DISTINCT h.{self._prop} AS hn, "
                         f"{self._rel_name('e')} AS rn, t.{self._prop} AS tn")
            params[f"pairs{n}"] = [list(p) for p in chunk]
            params[f"rels{n}"] = list(relations or ())
            size += len(chunk)
            if size >= self.batch_size or n == len(branches) - 1:
                rows = self._read(" UNION ALL ".join(parts), params)
                found.update((str(h), str(r), str(t)) for h, r, t in rows)
                parts, params, size = [], {}, 0
        return sorted(found)

    def degree(self, nodes: Iterable[str], *, direction: Direction = "both") -> dict[str, int]:
        """Number of distinct edges at each known node (a self-loop counts in and out)."""
        check_direction(direction)
        names = self._names(nodes)
        pattern, _ = self._rel("e", None)
        queries = []
        if direction in ("out", "both"):
            queries.append(f"(n)-{pattern}->{self._node('m')}")
        if direction in ("in", "both"):
            queries.append(f"{self._node('m')}-{pattern}->(n)")
        result: dict[str, int] = {}
        for chunk in self._chunks(names):
            for match in queries:
                rows = self._read(
                    f"{self._anchor()}OPTIONAL MATCH {match}"
                    f"{self._where(self._has_name('m'))} "
                    f"WITH DISTINCT nm, {self._rel_name('e')} AS r, m.{self._prop} AS x "
                    f"RETURN nm, count(x)", {"names": chunk})
                for nm, c in rows:
                    result[nm] = result.get(nm, 0) + int(c)
        return {n: result[n] for n in names if n in result}

    def schema_summary(self, max_relations: int = 50) -> str:
        """Relations by frequency with edge counts and the name-first example edge."""
        counts = self._relation_counts()
        total = self.counts()
        order = sorted(counts, key=lambda r: (-counts[r], r))[:max_relations]
        lines = [f"Knowledge graph: {total['nodes']} entities, {total['edges']} edges, "
                 f"{total['relations']} relation types.", "Relations (edge count; example):"]
        for rel in order:
            pattern, cond = self._rel("e", [rel])
            rows = self._read(
                f"MATCH {self._node('h')}-{pattern}->{self._node('t')}"
                f"{self._where(self._has_name('h', 't'), cond)} "
                f"RETURN h.{self._prop} AS h, t.{self._prop} AS t ORDER BY h, t LIMIT 1",
                {"rels": [rel]})
            example = f"; e.g. {rows[0][0]} -> {rows[0][1]}" if rows else ""
            desc = self.relation_descriptions.get(rel)
            line = f"- {rel} ({counts[rel]}{example})"
            lines.append(line + (f": {desc}" if desc else ""))
        if len(counts) > max_relations:
            lines.append(f"... and {len(counts) - max_relations} more relations")
        return "\n".join(lines)

    def database_schema(self) -> dict[str, list[str]]:
        """Labels, relationship types and property keys, from built-in procedures (no APOC)."""
        out: dict[str, list[str]] = {}
        for key, proc in (("labels", "db.labels()"), ("relationship_types",
                                                      "db.relationshipTypes()"),
                          ("property_keys", "db.propertyKeys()")):
            try:
                out[key] = sorted(str(r[0]) for r in self._read(f"CALL {proc}"))
            except GraphDatabaseError as exc:
                log.warning("schema procedure %s is not available: %s", proc, exc)
                out[key] = []
        return out

    # ------------------------------------------------------------------ export
    def iter_triples(self, batch_size: int = 1000) -> Iterator[Triple]:
        """Every edge, streamed: the outgoing edges of ``batch_size`` nodes per query."""
        batch: list[str] = []
        for name in self.iter_node_names(batch_size=max(batch_size, 1000)):
            batch.append(name)
            if len(batch) >= batch_size:
                yield from (Triple(*e) for e in self._edges(batch, "out", None, None))
                batch = []
        if batch:
            yield from (Triple(*e) for e in self._edges(batch, "out", None, None))

    def to_knowledge_graph(self, *, progress: bool = True, batch_size: int = 1000
                           ) -> KnowledgeGraph:
        """The whole database graph as an in-memory :class:`KnowledgeGraph` (name-ordered ids).

        For methods that need the full graph in memory (e.g. UltRAG's executor scores every
        entity), or to cache a database graph locally (``.save(directory)``).
        """
        import numpy as np
        from tqdm.auto import tqdm

        names = sorted(set(self.iter_node_names(batch_size=10_000)))
        relations = self.list_relations()
        node_index = {n: i for i, n in enumerate(names)}
        rel_index = {r: i for i, r in enumerate(relations)}
        heads, rels, tails = [], [], []
        bar = tqdm(total=None, unit="edge",
                   desc=f"reading {self.backend} graph", disable=not progress)
        try:
            for t in self.iter_triples(batch_size=batch_size):
                heads.append(node_index[t.head])
                rels.append(rel_index[t.relation])
                tails.append(node_index[t.tail])
                bar.update(1)
        finally:
            bar.close()
        return KnowledgeGraph(names, relations, np.asarray(heads, np.int64),
                              np.asarray(rels, np.int64), np.asarray(tails, np.int64),
                              relation_descriptions=self.relation_descriptions,
                              relation_labels={r: v for r, v in self.relation_labels.items()
                                               if r in rel_index})

    # ------------------------------------------------------------------ LLM-written Cypher
    #: Elements all ``range()`` calls of one untrusted query may generate together.
    max_range_elements = MAX_RANGE_ELEMENTS
    #: Bytes one untrusted query's result may bring over the network (``None``: no limit).
    max_result_bytes: int | None = MAX_RESULT_BYTES

    def cypher_backend(self) -> str:
        """The server kind untrusted Cypher is checked for (``backend=`` of
        :func:`~kgrag.graph.cypher.safety.check_read_only`: per-backend return types)."""
        return self.backend

    def run_cypher(self, query: str, params: Mapping[str, Any] | None = None, *,
                   limit: int = 100, timeout: float | None = 10.0,
                   max_bytes: int | None | Any = _UNSET) -> CypherRows:
        """Run untrusted (e.g. LLM-written) Cypher read-only; at most ``limit`` rows as dicts.

        The text is refused before sending (:class:`~kgrag.errors.UnsafeQueryError`) when
        :func:`~kgrag.graph.cypher.safety.check_read_only` finds a write, procedure or admin
        clause or a value this server cannot return (:meth:`cypher_backend`), and
        (:class:`~kgrag.errors.QueryBudgetError`) when it holds an expression whose work the
        server's timeout cannot stop or nesting its parser cannot afford (see
        :mod:`kgrag.graph.cypher.budget`). What is sent has
        ``LIMIT limit + 1`` injected, so the server never produces more rows than that; the
        result's ``truncated`` says whether more than ``limit`` matched. It runs read-only with
        a ``timeout`` (seconds; :class:`~kgrag.errors.QueryTimeoutError` when exceeded, and the
        abandoned reader is stopped). The reply may bring at most ``max_bytes`` bytes (default
        :attr:`max_result_bytes`, 4 MiB; ``None``: no limit): reading stops as soon as it has
        more, with :class:`~kgrag.errors.ResultTooLargeError` (a budget error), because one row
        can hold millions of values. Parameters a backend cannot pass exactly and safely are
        refused with :class:`~kgrag.errors.QueryParameterError`.
        """
        if limit < 1:
            raise ValueError("limit must be >= 1")
        params = dict(params or {})
        bad = [k for k in params if not (isinstance(k, str) and k.isidentifier())]
        if bad:
            raise QueryParameterError(f"query parameter names must be identifiers: {bad[0]!r}")
        text = prepare_untrusted_query(query, params, max_rows=limit,
                                       max_range=self.max_range_elements,
                                       backend=self.cypher_backend())
        refuse_nul_parameters(params)
        budget = self.max_result_bytes if max_bytes is _UNSET else max_bytes
        rows = self._run_user_query(text, params, limit + 1, timeout, budget)
        out = CypherRows(rows[:limit])
        out.truncated = len(rows) > limit
        out.limit = limit
        return out

    # ------------------------------------------------------------------ loading
    def load_triples(self, source: Any, **kwargs: Any) -> "Any":
        """Write triples into the database; see :func:`kgrag.graph.cypher.load.load_triples`."""
        from kgrag.graph.cypher.load import load_triples

        return load_triples(self, source, **kwargs)
