"""Where GraphRAFT's candidate queries run: the in-memory graph or a Cypher database.

GraphRAFT needs three things from a graph, and nothing else:

* ``existing(names)`` -- which linked names are nodes;
* ``enumerate(entities, families, gold)`` -- every non-empty 1hop / 2hop / 2path template
  instance around the entities, with its number of distinct results and of gold results;
* ``execute(pattern)`` -- the names one candidate query returns.

:class:`MemoryBackend` does this with numpy on the :class:`~kgrag.graph.memory.KnowledgeGraph`'s
integer arrays. :class:`CypherBackend` pushes it into a database store that has ``run_cypher``
(:class:`~kgrag.graph.cypher.neo4j.Neo4jGraphStore`, :class:`~kgrag.graph.cypher.falkordb.FalkorDBGraphStore`):
enumeration is the paper's aggregating template queries (App. A.2, undirected), with the result
and gold counts computed inside the database (``count(DISTINCT tgt)`` and the paper's
``size([t IN collect(DISTINCT tgt) WHERE ...])``), so no node is shipped to the client; a
selected candidate runs as its own :meth:`PathPattern.to_cypher` query. Every name and gold
answer is a query parameter.

Both backends return the same candidates in the same canonical order (see
:func:`~kgrag.methods.graphraft.enumeration.canonical_order`) and execution results sorted by
name, so the pipeline's output does not depend on where the graph lives. One caveat: the
in-memory enumeration caps a hub's 2hop expansion at ``max_frontier`` (relation, neighbour) pairs
(default 50,000); a database enumerates everything, so the two agree whenever no linked entity has
more first-hop pairs than that.
"""

from __future__ import annotations

from typing import Any, Iterable, Mapping, Protocol, Sequence

from kgrag.graph.base import CypherStore, GraphStore, is_cypher_store
from kgrag.graph.memory import KnowledgeGraph
from kgrag.methods.graphraft.enumeration import Candidate, canonical_order, enumerate_candidates
from kgrag.methods.graphraft.patterns import FAMILIES, PathPattern, _quote_identifier

#: Rows one aggregating enumeration query may return (a safety bound, not a tuning knob).
MAX_ENUMERATION_ROWS = 1_000_000


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

    def __init__(self, graph: KnowledgeGraph, *, max_frontier: int = 50_000) -> None:
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
        self._prop = "name" if self.name_property == "name" else _quote_identifier(self.name_property)

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
        return self.store.run_cypher(query, params, limit=MAX_ENUMERATION_ROWS, timeout=self.timeout)

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
            where = " AND ".join(["x3 <> x1"] + self._named("x2", "x3") + self._rels_named("r1", "r2"))
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
                f"MATCH {self._node('x1', 'n1')} MATCH {self._node('x3', 'n3')} WITH x1, x3, n1, n3 "
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
        families = tuple(families)
        for fam in families:
            if fam not in FAMILIES:
                raise ValueError(f"unknown template family {fam!r}; choose from {FAMILIES}")
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
                relations = (str(row["rel1"]),) if family == "1hop" else (str(row["rel1"]), str(row["rel2"]))
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
        rows = self.store.run_cypher(query, params, limit=MAX_ENUMERATION_ROWS, timeout=self.timeout)
        return sorted({str(r["name"]) for r in rows if r.get("name") is not None})

    def description(self, name: str) -> str:
        return ""


def as_backend(graph: GraphStore | GraphRAFTBackend, **kwargs: Any) -> GraphRAFTBackend:
    """The backend for ``graph``: a :class:`KnowledgeGraph`, a Cypher-capable store, or a backend."""
    if isinstance(graph, KnowledgeGraph):
        return MemoryBackend(graph, **kwargs)
    if isinstance(graph, (MemoryBackend, CypherBackend)):
        return graph
    if is_cypher_store(graph):
        return CypherBackend(graph, **kwargs)
    raise TypeError(
        f"GraphRAFT runs on a kgrag.KnowledgeGraph or a Cypher-capable GraphStore "
        f"(Neo4jGraphStore, FalkorDBGraphStore), not {type(graph).__name__}; load other stores "
        "into a KnowledgeGraph first")
