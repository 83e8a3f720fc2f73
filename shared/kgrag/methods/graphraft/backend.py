"""Where GraphRAFT's candidate queries run: the in-memory graph, a Cypher database, any GraphStore.

GraphRAFT needs three things from a graph, and nothing else:

* ``existing(names)`` -- which linked names are nodes;
* ``enumerate(entities, families, gold)`` -- every non-empty 1hop / 2hop / 2path template
  instance around the entities, with its number of distinct results and of gold results;
* ``execute(pattern)`` -- the names one candidate query returns.

:class:`MemoryBackend` does this with numpy on the :class:`~kgrag.graph.memory.KnowledgeGraph`'s
integer arrays; :class:`StoreBackend` with the protocol's ``one_hop`` on any other
:class:`~kgrag.graph.base.GraphStore`. :class:`CypherBackend` pushes it into a database store that
has ``run_cypher`` (:class:`~kgrag.graph.cypher.neo4j.Neo4jGraphStore`,
:class:`~kgrag.graph.cypher.falkordb.FalkorDBGraphStore`): enumeration is the paper's aggregating
template queries (App. A.2, undirected), with the result and gold counts computed inside the
database (``count(DISTINCT tgt)`` and the paper's ``size([t IN collect(DISTINCT tgt) WHERE ...])``),
so no node is shipped to the client; a selected candidate runs as its own
:meth:`PathPattern.to_cypher` query. Every name and gold answer is a query parameter.

Every backend returns the same candidates in the same canonical order (see
:func:`~kgrag.methods.graphraft.enumeration.canonical_order`) and execution results sorted by
name, so the pipeline's output does not depend on where the graph lives. One caveat: the
in-memory enumeration caps a hub's 2hop expansion at ``max_frontier`` (relation, neighbour) pairs
(default 50,000); a database enumerates everything, so the two agree whenever no linked entity has
more first-hop pairs than that.
"""

from __future__ import annotations

from typing import Any, Iterable, Mapping, Protocol, Sequence

from kgrag.errors import UnknownNodeError, UnknownRelationError
from kgrag.graph.base import CypherStore, GraphStore, IdIndexedGraph, is_cypher_store
from kgrag.methods.graphraft.enumeration import Candidate, canonical_order, enumerate_candidates
from kgrag.methods.graphraft.patterns import FAMILIES, Family, PathPattern, _quote_identifier

#: Rows one aggregating enumeration query may return (a safety bound, not a tuning knob).
MAX_ENUMERATION_ROWS = 1_000_000


def known_families(families: Iterable[str]) -> tuple[str, ...]:
    """``families`` as a tuple; a name that is not one of :data:`FAMILIES` is a ValueError."""
    families = tuple(families)
    for fam in families:
        if fam not in FAMILIES:
            raise ValueError(f"unknown template family {fam!r}; choose from {FAMILIES}")
    return families


class GraphRAFTBackend(Protocol):
    """Where GraphRAFT enumerates and runs its candidate queries: in memory or in a database."""

    @property
    def graph(self) -> GraphStore:
        """The graph the method links against and reads from."""

    def existing(self, names: Iterable[str]) -> list[str]: ...

    def enumerate(self, entities: Sequence[str], families: Iterable[str] = FAMILIES,
                  gold: Iterable[str] | None = None) -> list[Candidate]: ...

    def execute(self, pattern: PathPattern) -> list[str]: ...

    def cypher(self, pattern: PathPattern) -> tuple[str, dict[str, str]]: ...

    def description(self, name: str) -> str: ...


class MemoryBackend:
    """Candidates enumerated and executed on a :class:`KnowledgeGraph` (numpy, integer ids)."""

    def __init__(self, graph: IdIndexedGraph, *, max_frontier: int = 50_000) -> None:
        self.graph = graph
        self.max_frontier = max_frontier

    def existing(self, names: Iterable[str]) -> list[str]:
        return [n for n in dict.fromkeys(names) if self.graph.has_node(n)]

    def enumerate(self, entities: Sequence[str], families: Iterable[str] = FAMILIES,
                  gold: Iterable[str] | None = None) -> list[Candidate]:
        return enumerate_candidates(self.graph, entities, families=families, gold=gold,
                                    max_frontier=self.max_frontier)

    def execute(self, pattern: PathPattern) -> list[str]:
        return sorted(pattern.execute(self.graph))

    def cypher(self, pattern: PathPattern) -> tuple[str, dict[str, str]]:
        """The query a database holding this graph (default mapping) would run."""
        return pattern.to_cypher()

    def description(self, name: str) -> str:
        return self.graph.node_descriptions.get(name, "")


class CypherBackend:
    """Candidates enumerated and executed inside a Cypher database through ``store.run_cypher``.

    The store's mapping (``node_label``, ``name_property``, ``relation_property``,
    ``relationship_type``; see :class:`~kgrag.graph.cypher.store.CypherGraphStore`) decides how
    nodes and relations are matched. ``timeout`` bounds each query (seconds).
    """

    def __init__(self, store: CypherStore, *, timeout: float | None = 60.0) -> None:
        if not is_cypher_store(store):
            raise TypeError(f"{type(store).__name__} is not a Cypher database store "
                            "(kgrag.graph.base.CypherStore: run_cypher, node mapping, indexes)")
        self.store = store
        #: the graph the method talks to (the same store)
        self.graph: CypherStore = store
        self.timeout = timeout
        self.node_label: str | None = store.node_label
        self.name_property: str = store.name_property
        self.relation_property: str | None = store.relation_property
        self.relationship_type: str = store.relationship_type
        label = f":{_quote_identifier(self.node_label)}" if self.node_label else ""
        self._label = label
        self._prop = ("name" if self.name_property == "name"
                      else _quote_identifier(self.name_property))

    # ------------------------------------------------------------------ query fragments
    def _node(self, var: str, key: str | None = None) -> str:
        if key is None:
            return f"({var}{self._label})"
        return f"({var}{self._label} {{{self._prop}: {key}}})"

    def _rel(self, var: str) -> str:
        if self.relation_property is None:
            return f"-[{var}]-"
        return f"-[{var}:{_quote_identifier(self.relationship_type)}]-"

    def _rel_name(self, var: str) -> str:
        if self.relation_property is None:
            return f"type({var})"
        return f"{var}.{_quote_identifier(self.relation_property)}"

    def _named(self, *variables: str) -> list[str]:
        return [f"{v}.{self._prop} IS NOT NULL" for v in variables]

    def _rels_named(self, *variables: str) -> list[str]:
        if self.relation_property is None:
            return []
        return [f"{self._rel_name(v)} IS NOT NULL" for v in variables]

    def _run(self, query: str, params: dict[str, Any]) -> Sequence[Mapping[str, Any]]:
        return self.store.run_cypher(query, params, limit=MAX_ENUMERATION_ROWS,
                                     timeout=self.timeout)

    # ------------------------------------------------------------------ the template queries
    def enumeration_queries(self, families: Iterable[str] = FAMILIES) -> dict[str, str]:
        """The aggregating template queries (parameters ``$names`` and ``$gold``), per family.

        Each starts with a name-index lookup of the linked entities in a ``MATCH`` of its own,
        followed by ``WITH``, so the planner expands from them (the paper's Tables 3-4 show how
        much the starting point matters); a pattern match in one clause let FalkorDB start from
        a label scan and time out on the full MetaQA graph.
        """
        p, families = self._prop, tuple(families)
        counts = ("size(found) AS total, "
                  f"size([t IN found WHERE t.{p} IN $gold]) AS hits")
        queries: dict[str, str] = {}
        if "1hop" in families:
            where = " AND ".join(self._named("x2") + self._rels_named("r1"))
            queries["1hop"] = (
                f"UNWIND $names AS n1 MATCH {self._node('x1', 'n1')} WITH x1, n1 "
                f"MATCH (x1){self._rel('r1')}{self._node('x2')} WHERE {where} "
                f"WITH n1, {self._rel_name('r1')} AS rel1, collect(DISTINCT x2) AS found "
                f"RETURN n1 AS source, rel1, {counts}")
        if "2hop" in families:
            where = " AND ".join(["x3 <> x1"] + self._named("x2",
                                                            "x3") + self._rels_named("r1", "r2"))
            queries["2hop"] = (
                f"UNWIND $names AS n1 MATCH {self._node('x1', 'n1')} WITH x1, n1 "
                f"MATCH (x1){self._rel('r1')}{self._node('x2')}{self._rel('r2')}{self._node('x3')} "
                f"WHERE {where} "
                f"WITH n1, {self._rel_name('r1')} AS rel1, {self._rel_name('r2')} AS rel2, "
                f"collect(DISTINCT x3) AS found "
                f"RETURN n1 AS source, rel1, rel2, {counts}")
        if "2path" in families:
            where = " AND ".join(["x1 <> x3"] + self._named("x2") + self._rels_named("r1", "r2"))
            queries["2path"] = (
                f"UNWIND $names AS n1 UNWIND $names AS n3 WITH n1, n3 WHERE n1 <> n3 "
                f"MATCH {self._node('x1', 'n1')} MATCH {self._node('x3', 'n3')} "
                f"WITH x1, x3, n1, n3 "
                f"MATCH (x1){self._rel('r1')}{self._node('x2')}{self._rel('r2')}(x3) WHERE {where} "
                f"WITH n1, n3, {self._rel_name('r1')} AS rel1, {self._rel_name('r2')} AS rel2, "
                f"collect(DISTINCT x2) AS found "
                f"RETURN n1 AS source, rel1, rel2, n3 AS target, {counts}")
        return queries

    # ------------------------------------------------------------------ backend interface
    def existing(self, names: Iterable[str]) -> list[str]:
        names = list(dict.fromkeys(names))
        found = set(self.store.existing_nodes(names))
        return [n for n in names if n in found]

    def enumerate(self, entities: Sequence[str], families: Iterable[str] = FAMILIES,
                  gold: Iterable[str] | None = None) -> list[Candidate]:
        families = known_families(families)
        names = self.existing(entities)
        if not names:
            return []
        params = {"names": names, "gold": sorted(set(gold or ()))}
        out: list[Candidate] = []
        for family, query in self.enumeration_queries(families).items():
            for row in self._run(query, params):
                total = int(row["total"])
                if total <= 0:
                    continue
                relations = (str(row["rel1"]),
                             ) if family == "1hop" else (str(row["rel1"]), str(row["rel2"]))
                pattern = PathPattern(family, str(row["source"]), relations,  # type: ignore[arg-type]
                                      target=str(row["target"]) if family == "2path" else None)
                out.append(Candidate(pattern, total, int(row["hits"])))
        return canonical_order(out, names)

    def cypher(self, pattern: PathPattern) -> tuple[str, dict[str, str]]:
        """``pattern``'s parameterised Cypher under this store's mapping."""
        return pattern.to_cypher(self.name_property, node_label=self.node_label,
                                 relation_property=self.relation_property,
                                 relationship_type=self.relationship_type)

    def execute(self, pattern: PathPattern) -> list[str]:
        query, params = self.cypher(pattern)
        rows = self.store.run_cypher(query, params, limit=MAX_ENUMERATION_ROWS,
                                     timeout=self.timeout)
        return sorted({str(r["name"]) for r in rows if r.get("name") is not None})

    def description(self, name: str) -> str:
        return ""


class StoreBackend:
    """Candidates enumerated and executed on any :class:`~kgrag.graph.base.GraphStore` through
    its name-level ``one_hop`` (no ids, no Cypher): the same candidates, order, counts and
    results as the other backends.

    Enumeration asks one ``one_hop`` per linked entity and one for all of its first-hop
    neighbours together (the 2hop middle nodes); like a database, and unlike the in-memory
    backend's ``max_frontier`` cap, it expands a hub completely.
    """

    def __init__(self, graph: GraphStore) -> None:
        self.graph = graph

    def existing(self, names: Iterable[str]) -> list[str]:
        return [n for n in dict.fromkeys(names) if self.graph.has_node(n)]

    def _first_hops(self, nodes: Sequence[str], relations: Iterable[str] | None = None
                    ) -> dict[str, set[tuple[str, str]]]:
        """Per node: its distinct (relation, other end) pairs, edges taken in either direction."""
        wanted = set(nodes)
        out: dict[str, set[tuple[str, str]]] = {n: set() for n in nodes}
        if not nodes:
            return out
        for t in self.graph.one_hop(list(nodes), direction="both", relations=relations):
            if t.head in wanted:
                out[t.head].add((t.relation, t.tail))
            if t.tail in wanted:
                out[t.tail].add((t.relation, t.head))
        return out

    def enumerate(self, entities: Sequence[str], families: Iterable[str] = FAMILIES,
                  gold: Iterable[str] | None = None) -> list[Candidate]:
        families = known_families(families)
        names = self.existing(entities)
        gold_set = set(gold) if gold is not None else set()
        first = self._first_hops(names)
        groups: dict[tuple[Family, str, tuple[str, ...], str | None], set[str]] = {}

        def add(family: Family, source: str, relations: tuple[str, ...], target: str | None,
                node: str) -> None:
            groups.setdefault((family, source, relations, target), set()).add(node)

        for src in names:
            if "1hop" in families:
                for rel, other in first[src]:
                    add("1hop", src, (rel,), None, other)
            if "2hop" in families:
                middles = sorted({other for _, other in first[src]})
                second = self._first_hops(middles)
                for r1, x2 in first[src]:
                    for r2, x3 in second[x2]:
                        if x3 != src:
                            add("2hop", src, (r1, r2), None, x3)
        if "2path" in families:
            for a in names:
                for b in names:
                    if a == b:
                        continue
                    by_middle: dict[str, list[str]] = {}
                    for r2, x in first[b]:
                        by_middle.setdefault(x, []).append(r2)
                    for r1, x in first[a]:
                        for r2 in by_middle.get(x, ()):
                            add("2path", a, (r1, r2), b, x)
        out = [Candidate(PathPattern(family, source, relations, target=target), len(nodes),
                         len(nodes & gold_set))
               for (family, source, relations, target), nodes in groups.items()]
        return canonical_order(out, names)

    def _neighbours(self, nodes: Iterable[str], relation: str) -> set[str]:
        nodes = list(dict.fromkeys(nodes))
        try:
            hops = self._first_hops(nodes, [relation])
        except (UnknownNodeError, UnknownRelationError):  # a name the graph lacks: no rows
            return set()
        return {other for pairs in hops.values() for _, other in pairs}

    def execute(self, pattern: PathPattern) -> list[str]:
        if not self.graph.has_node(pattern.source):
            return []
        first = self._neighbours([pattern.source], pattern.relations[0])
        if pattern.family == "1hop":
            return sorted(first)
        if pattern.family == "2hop":
            return sorted(self._neighbours(first, pattern.relations[1]) - {pattern.source})
        target = pattern.target or ""
        if target == pattern.source or not self.graph.has_node(target):
            return []
        return sorted(first & self._neighbours([target], pattern.relations[1]))

    def cypher(self, pattern: PathPattern) -> tuple[str, dict[str, str]]:
        """The query a database holding this graph (default mapping) would run."""
        return pattern.to_cypher()

    def description(self, name: str) -> str:
        return ""


def as_backend(graph: GraphStore | GraphRAFTBackend, **kwargs: Any) -> GraphRAFTBackend:
    """The backend for ``graph``: numpy on a :class:`KnowledgeGraph`, the paper's aggregating
    queries on a Cypher store, ``one_hop`` calls on any other :class:`GraphStore`; a backend
    is returned as it is."""
    if isinstance(graph, IdIndexedGraph):
        return MemoryBackend(graph, **kwargs)
    if isinstance(graph, (MemoryBackend, CypherBackend, StoreBackend)):
        return graph
    if is_cypher_store(graph):
        return CypherBackend(graph, **kwargs)
    if isinstance(graph, GraphStore):
        return StoreBackend(graph)
    raise TypeError(f"GraphRAFT runs on a kgrag GraphStore (a KnowledgeGraph, a database store "
                    f"or any store of kgrag.graph.base.GraphStore), not {type(graph).__name__}")
