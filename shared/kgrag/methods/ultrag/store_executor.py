"""Executing UltRAG queries on any GraphStore (a Neo4j / FalkorDB database, ...).

The in-memory executor needs the whole graph as integer arrays. A database store keeps the graph
where it is: :class:`StoreQueryExecutor` holds fuzzy sets as ``{entity name: membership}``
dictionaries and runs each projection as one ``one_hop(frontier, direction, relations=[r])``
call, which a database store pushes down as one parameterised read query. The semantics are those
of :mod:`kgrag.methods.ultrag.executor` (max / noisy-OR / clamped-sum projection; product, Gödel
or Łukasiewicz AND / OR), so the same query gives the same memberships on both (tested against a
real FalkorDB server).

Limits (documented choices):

* ``NOT`` is refused: a complement needs every node of the graph.
* A frontier larger than ``max_frontier`` entities is cut to its ``max_frontier`` highest
  memberships (ties by name) before the next projection, so a hub cannot make one projection
  fetch millions of edges; :attr:`StoreQueryExecutor.truncated` then says so.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from kgrag.methods.ultrag.executor import LOGICS, PROJECTIONS
from kgrag.methods.ultrag.query import (
    Entity,
    Intersection,
    Negation,
    Projection,
    Query,
    QueryStructureError,
    Union_,
    leaves,
    parse_query,
    relations,
)
from kgrag.methods.ultrag.vocabulary import GraphVocabulary

FuzzyDict = dict[str, float]

_AND: dict[str, Callable[[float, float], float]] = {
    "product": lambda x, y: x * y,
    "godel": min,
    "lukasiewicz": lambda x, y: max(x + y - 1.0, 0.0),
}
_OR: dict[str, Callable[[float, float], float]] = {
    "product": lambda x, y: x + y - x * y,
    "godel": max,
    "lukasiewicz": lambda x, y: min(x + y, 1.0),
}


class StoreQueryExecutor:
    """Fuzzy query execution through a GraphStore's name-level ``one_hop``."""

    def __init__(self, store: Any, vocabulary: GraphVocabulary, *, projection: str = "max",
                 logic: str = "product", threshold: float = 0.0, soft_and: bool = False,
                 max_frontier: int = 10_000) -> None:
        if projection not in PROJECTIONS:
            raise ValueError(f"projection must be one of {PROJECTIONS}, got {projection!r}")
        if logic not in LOGICS:
            raise ValueError(f"logic must be one of {LOGICS}, got {logic!r}")
        if max_frontier < 1:
            raise ValueError("max_frontier must be >= 1")
        self.store = store
        self.vocabulary = vocabulary
        self.projection = projection
        self.logic = logic
        self.threshold = threshold
        self.soft_and = soft_and
        self.max_frontier = max_frontier
        self.truncated = False

    def execute_names(self, query: Query | str, leaf_sets: Sequence[Mapping[str, float]]
                      ) -> FuzzyDict:
        """Memberships of every entity with a non-zero score, by name."""
        query = parse_query(query)
        if len(leaf_sets) != len(leaves(query)):
            raise ValueError(f"the query has {len(leaves(query))} leaves but {len(leaf_sets)} "
                             "leaf sets were given")
        for rel in relations(query):
            self.vocabulary.resolve_relation(rel)
        sets = []
        for leaf in leaf_sets:
            clean = {str(k): float(v) for k, v in leaf.items() if v}
            if not all(0.0 < v <= 1.0 for v in clean.values()):
                raise ValueError("leaf memberships must be finite and in [0, 1]")
            sets.append(clean)
        self.truncated = False
        return self._eval(query, sets, iter(range(len(sets))))

    def _eval(self, node: Any, sets: list[FuzzyDict], position: Any) -> FuzzyDict:
        if isinstance(node, Entity):
            return sets[next(position)]
        if isinstance(node, Projection):
            return self._project(self._eval(node.operand, sets, position), node)
        if isinstance(node, Negation):
            raise QueryStructureError("NOT needs every node of the graph; it is only supported "
                                      "on an in-memory KnowledgeGraph")
        operands = [self._eval(q, sets, position) for q in node.operands]
        if isinstance(node, Intersection):
            keys = set(operands[0]).intersection(*operands[1:])
            combine = _AND[self.logic]
        elif isinstance(node, Union_):
            keys = set(operands[0]).union(*operands[1:])
            combine = _OR[self.logic]
        else:  # pragma: no cover
            raise QueryStructureError(f"not a query node: {node!r}")
        out: FuzzyDict = {}
        for key in keys:
            value = operands[0].get(key, 0.0)
            for other in operands[1:]:
                value = combine(value, other.get(key, 0.0))
            if value > 0:
                out[key] = value
        if isinstance(node, Intersection) and self.soft_and and not out \
                and all(operands):
            union = set().union(*operands)
            out = {k: sum(o.get(k, 0.0) for o in operands) / len(operands) for k in union}
        return out

    def _project(self, x: FuzzyDict, node: Projection) -> FuzzyDict:
        if not x:
            return {}
        rel, inverse = self.vocabulary.resolve_relation(node.relation)
        name = self.vocabulary.relation_names[rel]
        if len(x) > self.max_frontier:
            self.truncated = True
            kept = sorted(x.items(), key=lambda kv: (-kv[1], kv[0]))[: self.max_frontier]
            x = dict(kept)
        triples = self.store.one_hop(list(x), direction="in" if inverse else "out",
                                     relations=[name])
        best: FuzzyDict = {}
        total: FuzzyDict = {}
        keep_prob: FuzzyDict = {}
        for triple in triples:
            if triple.relation != name:
                continue
            src, dst = (triple.tail, triple.head) if inverse else (triple.head, triple.tail)
            weight = x.get(src)
            if not weight:
                continue
            if self.projection == "max":
                if weight > best.get(dst, 0.0):
                    best[dst] = weight
            elif self.projection == "sum":
                total[dst] = total.get(dst, 0.0) + weight
            else:
                keep_prob[dst] = keep_prob.get(dst, 1.0) * (1.0 - weight)
        if self.projection == "max":
            out = best
        elif self.projection == "sum":
            out = {k: min(v, 1.0) for k, v in total.items()}
        else:
            out = {k: 1.0 - v for k, v in keep_prob.items()}
        if self.threshold > 0:
            out = {k: v for k, v in out.items() if v >= self.threshold}
        return {k: v for k, v in out.items() if v > 0}
