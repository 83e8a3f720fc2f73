"""GraphRAFT's candidate queries: the 1-hop, 2-hop and 2-entity-path templates as small objects.

A :class:`PathPattern` is the canonical form of one candidate query. It

* executes natively on the in-memory :class:`~kgrag.graph.memory.KnowledgeGraph` (integer ids,
  CSR adjacency), returning the distinct names the query returns;
* compiles to parameter-safe Cypher (:meth:`PathPattern.to_cypher`) for database stores: entity
  names are parameters, relation types are backtick-quoted identifiers;
* renders to one canonical text (:meth:`PathPattern.text`) that the query selector sees and
  decodes -- names are inlined as JSON string literals, so quotes and backslashes are escaped and
  the string maps back to exactly one pattern.

Matching is undirected, as in the paper's templates (``-[r]-``). Templates (paper App. A.2):

* ``1hop``:  ``(x1 {name: n1})-[:R1]-(x2)``, returns ``x2``;
* ``2hop``:  ``(x1 {name: n1})-[:R1]-(x2)-[:R2]-(x3)``, ``x3 <> x1``, returns ``x3``;
* ``2path``: ``(x1 {name: n1})-[:R1]-(x2)-[:R2]-(x3 {name: n3})``, ``x1 <> x3``, returns ``x2``.

Node labels are optional: the in-memory graph has none, so patterns carry ``None`` and the Cypher
has no label; a labelled store may fill them in.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

import numpy as np

from kgrag.graph.base import IdIndexedGraph

Family = Literal["1hop", "2hop", "2path"]
FAMILIES: tuple[str, ...] = ("1hop", "2hop", "2path")


def _quote_identifier(name: str) -> str:
    """A Cypher identifier in backticks (backticks inside doubled), for relation types/labels."""
    return "`" + name.replace("`", "``") + "`"


@dataclass(frozen=True, order=True)
class PathPattern:
    """One concrete, executable candidate query."""

    family: Family
    source: str
    relations: tuple[str, ...]
    target: str | None = None  # the second entity of a 2path pattern
    labels: tuple[str | None, ...] = ()  # optional labels of x1, x2(, x3)

    def __post_init__(self) -> None:
        if self.family not in FAMILIES:
            raise ValueError(f"unknown template family {self.family!r}")
        want = 1 if self.family == "1hop" else 2
        if len(self.relations) != want:
            raise ValueError(f"{self.family} needs {want} relation(s), got {self.relations!r}")
        if (self.family == "2path") != (self.target is not None):
            raise ValueError("exactly the 2path family names a second entity")

    def _node(self, index: int, name_param: str | None, inline: str | None) -> str:
        label = self.labels[index] if index < len(self.labels) else None
        inner = f"x{index + 1}" + (":" + _quote_identifier(label) if label else "")
        if name_param is not None:
            inner += " {name: $" + name_param + "}"
        elif inline is not None:
            inner += " {name: " + json.dumps(inline, ensure_ascii=False) + "}"
        return f"({inner})"

    def _match(self, inline: bool) -> str:
        src = self._node(0, None if inline else "n1", self.source if inline else None)
        rels = [f"-[r{i + 1}:{_quote_identifier(r)}]-" for i, r in enumerate(self.relations)]
        if self.family == "1hop":
            return f"MATCH {src}{rels[0]}{self._node(1, None, None)}"
        last = (self._node(2, None if inline else "n3", self.target if inline else None)
                if self.family == "2path" else self._node(2, None, None))
        return f"MATCH {src}{rels[0]}{self._node(1, None, None)}{rels[1]}{last}"

    @property
    def returned(self) -> str:
        return {"1hop": "x2", "2hop": "x3", "2path": "x2"}[self.family]

    def _where(self) -> str:
        if self.family == "2hop":
            return " WHERE x3 <> x1"
        if self.family == "2path":
            return " WHERE x1 <> x3"
        return ""

    def text(self) -> str:
        """The canonical query string (names inlined, escaped) shown to and decoded by L1."""
        return (f"{self._match(inline=True)}{self._where()} "
                f"RETURN DISTINCT {self.returned}.name AS name")

    def to_cypher(self, name_property: str = "name", *, node_label: str | None = None,
                  relation_property: str | None = None,
                  relationship_type: str = "RELATED") -> tuple[str, dict[str, str]]:
        """Parameterised Cypher and its parameters (no value is interpolated into the string).

        Entity names (``$n1``, ``$n3``) -- and, when relations are stored in a relationship
        property, relation names (``$r1``, ``$r2``) -- are parameters; identifiers (label, name
        property, relationship types) are backtick-quoted. The store mapping arguments say how a
        database holds the graph: ``node_label`` is used for every node without a label of its
        own; with ``relation_property`` set, every edge is a ``relationship_type`` relationship
        whose ``relation_property`` holds the relation name.
        """
        prop = "name" if name_property == "name" else _quote_identifier(name_property)
        params: dict[str, str] = {"n1": self.source}
        if self.target is not None:
            params["n3"] = self.target

        def node(index: int, key: str | None) -> str:
            label = (self.labels[index] if index < len(self.labels) and self.labels[index]
                     else node_label)
            inner = f"x{index + 1}" + (":" + _quote_identifier(label) if label else "")
            return f"({inner} {{{prop}: ${key}}})" if key else f"({inner})"

        conditions: list[str] = []
        rels = []
        for i, rel in enumerate(self.relations):
            if relation_property is None:
                rels.append(f"-[r{i + 1}:{_quote_identifier(rel)}]-")
            else:
                rels.append(f"-[r{i + 1}:{_quote_identifier(relationship_type)}]-")
                conditions.append(f"r{i + 1}.{_quote_identifier(relation_property)} = $r{i + 1}")
                params[f"r{i + 1}"] = rel
        # the named ends are matched first, on their own, so that the planner starts from the
        # name index (FalkorDB otherwise may scan a label at the open end and expand backwards)
        if self.family == "1hop":
            match = f"MATCH {node(0, 'n1')} WITH x1 MATCH (x1){rels[0]}{node(1, None)}"
        elif self.family == "2hop":
            match = (f"MATCH {node(0, 'n1')} WITH x1 "
                     f"MATCH (x1){rels[0]}{node(1, None)}{rels[1]}{node(2, None)}")
        else:
            match = (f"MATCH {node(0, 'n1')} MATCH {node(2, 'n3')} WITH x1, x3 "
                     f"MATCH (x1){rels[0]}{node(1, None)}{rels[1]}(x3)")
        if self.family == "2hop":
            conditions.insert(0, "x3 <> x1")
        elif self.family == "2path":
            conditions.insert(0, "x1 <> x3")
        # nodes without a name are invisible to the stores (and absent from the in-memory graph)
        unnamed = ("x2", "x3") if self.family == "2hop" else ("x2",)
        conditions.extend(f"{var}.{prop} IS NOT NULL" for var in unnamed)
        where = " WHERE " + " AND ".join(conditions)
        return f"{match}{where} RETURN DISTINCT {self.returned}.{prop} AS name", params

    def verbalize(self, relation_text: Callable[[str], str] | None = None) -> str:
        """A short natural-language rendering (for embedding-based selection and prompts);
        ``relation_text`` renders a relation (default: its name)."""
        r = [relation_text(x) if relation_text else x for x in self.relations]
        if self.family == "1hop":
            return f"{self.source} {r[0]} ?"
        if self.family == "2hop":
            return f"{self.source} {r[0]} _ {r[1]} ?"
        return f"{self.source} {r[0]} ? {r[1]} {self.target}"

    def execute_ids(self, kg: IdIndexedGraph) -> np.ndarray:
        """Sorted distinct node ids this query returns on ``kg`` (empty if a name is unknown)."""
        try:
            src = kg.node_id(self.source)
            rel_ids = [kg.relation_id(r) for r in self.relations]
        except KeyError:
            return np.empty(0, np.int64)
        first = _undirected_neighbours(kg, np.array([src]), rel_ids[0])
        if self.family == "1hop":
            return first
        second_all = _undirected_neighbours(kg, first, rel_ids[1])
        if self.family == "2hop":
            return second_all[second_all != src]
        try:
            tgt = kg.node_id(self.target or "")
        except KeyError:
            return np.empty(0, np.int64)
        if tgt == src:
            return np.empty(0, np.int64)
        # x2 must touch both entities: neighbours of src via r1 that are neighbours of tgt via r2
        return np.intersect1d(first, _undirected_neighbours(kg, np.array([tgt]), rel_ids[1]))

    def execute(self, kg: IdIndexedGraph) -> list[str]:
        return [kg.node_names[i] for i in self.execute_ids(kg).tolist()]


def _undirected_neighbours(kg: IdIndexedGraph, nodes: np.ndarray, rel: int) -> np.ndarray:
    """Sorted distinct nodes joined to ``nodes`` by relation ``rel`` in either direction."""
    nodes = np.asarray(nodes, dtype=np.int64)
    if len(nodes) == 0:
        return np.empty(0, np.int64)
    e_out, _ = kg._edges_one_direction(nodes, False, np.array([rel]))
    e_in, _ = kg._edges_one_direction(nodes, True, np.array([rel]))
    return np.unique(np.concatenate([kg.tails[e_out], kg.heads[e_in]]).astype(np.int64))
