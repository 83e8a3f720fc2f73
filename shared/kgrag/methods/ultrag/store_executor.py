"""Executing UltRAG queries on any GraphStore (a Neo4j / FalkorDB database, ...).

The in-memory executor needs the whole graph as integer arrays. A database store keeps the graph
where it is: :class:`StoreSets` holds fuzzy sets as ``{entity name: membership}`` dictionaries
and runs each projection as one ``one_hop(frontier, direction, relations=[r])`` call, which a
database store pushes down as one parameterised read query. The fuzzy logic is not repeated
here: :class:`StoreQueryExecutor` is the same
:class:`~kgrag.methods.ultrag.executor.FuzzyQueryExecutor` as in memory, over these sets, so
the same query gives the same memberships on both (tested against a real FalkorDB server).
The neural executor on a store runs on a SEPPR subgraph fetched from it (see
:mod:`kgrag.methods.ultrag.neural`).

Limits (documented choices):

* ``NOT`` is refused: a complement needs every node of the graph.
* A frontier larger than ``max_frontier`` entities is cut to its ``max_frontier`` highest
  memberships (ties by name) before the next projection, so a hub cannot make one projection
  fetch millions of edges; :attr:`StoreQueryExecutor.truncated` then says so.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from kgrag.graph.base import GraphStore
from kgrag.methods.ultrag.executor import LOGICS, PROJECTIONS, FuzzyQueryExecutor
from kgrag.methods.ultrag.query import Query, QueryStructureError
from kgrag.methods.ultrag.vocabulary import GraphVocabulary

FuzzyDict = dict[str, float]


class StoreSets:
    """:class:`~kgrag.methods.ultrag.executor.SetAlgebra` over ``{entity name: membership}``.

    A projection is one ``store.one_hop(frontier, direction, relations=[r])`` call per set;
    AND / OR come from the shared evaluator's fuzzy logic, applied to the dictionaries here.
    """

    def __init__(self, store: GraphStore, vocabulary: GraphVocabulary, projection: str = "max",
                 max_frontier: int = 10_000) -> None:
        self.store = store
        self.vocabulary = vocabulary
        self.projection = projection
        self.max_frontier = max_frontier
        self.truncated = False

    def leaf(self, x: Mapping[str, float]) -> FuzzyDict:
        clean = {str(k): float(v) for k, v in x.items() if v}
        if not all(0.0 < v <= 1.0 for v in clean.values()):
            raise ValueError("leaf memberships must be finite and in [0, 1]")
        return clean

    def project(self, batch: Sequence[tuple[FuzzyDict, int, bool]]) -> list[FuzzyDict]:
        return [self._project(x, rel, inverse) for x, rel, inverse in batch]

    def _project(self, x: FuzzyDict, rel: int, inverse: bool) -> FuzzyDict:
        if not x:
            return {}
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
        return {k: v for k, v in out.items() if v > 0}

    def combine(self, operands: Sequence[FuzzyDict], op: Callable[[Any, Any], Any],
                conjunctive: bool) -> FuzzyDict:
        if conjunctive:  # every t-norm is 0 where one side is 0
            keys = set(operands[0]).intersection(*operands[1:])
        else:
            keys = set(operands[0]).union(*operands[1:])
        out: FuzzyDict = {}
        for key in keys:
            value = operands[0].get(key, 0.0)
            for other in operands[1:]:
                value = op(value, other.get(key, 0.0))
            if value > 0:
                out[key] = float(value)
        return out

    def complement(self, x: FuzzyDict) -> FuzzyDict:
        raise QueryStructureError("NOT needs every node of the graph; it is only supported "
                                  "on an in-memory KnowledgeGraph")

    def mean(self, operands: Sequence[FuzzyDict]) -> FuzzyDict:
        union = set().union(*operands)
        return {k: sum(o.get(k, 0.0) for o in operands) / len(operands) for k in union}

    def is_empty(self, x: FuzzyDict) -> bool:
        return not x

    def cut(self, x: FuzzyDict, threshold: float) -> FuzzyDict:
        return {k: v for k, v in x.items() if v >= threshold}

    def output(self, x: FuzzyDict) -> FuzzyDict:
        return x


class StoreQueryExecutor(FuzzyQueryExecutor):
    """Fuzzy query execution through a GraphStore's name-level ``one_hop``."""

    def __init__(self, store: GraphStore, vocabulary: GraphVocabulary, *, projection: str = "max",
                 logic: str = "product", threshold: float = 0.0, soft_and: bool = False,
                 max_frontier: int = 10_000) -> None:
        if projection not in PROJECTIONS:
            raise ValueError(f"projection must be one of {PROJECTIONS}, got {projection!r}")
        if logic not in LOGICS:
            raise ValueError(f"logic must be one of {LOGICS}, got {logic!r}")
        if max_frontier < 1:
            raise ValueError("max_frontier must be >= 1")
        self.sets = StoreSets(store, vocabulary, projection, max_frontier)
        super().__init__(self.sets, vocabulary, logic=logic, threshold=threshold,
                         soft_and=soft_and)
        self.store = store
        self.projection = projection
        self.max_frontier = max_frontier

    @property
    def truncated(self) -> bool:
        """Whether the last execution cut a frontier to ``max_frontier`` entities."""
        return self.sets.truncated

    def execute_names(self, query: Query | str, leaf_sets: Sequence[Mapping[str, float]]
                      ) -> FuzzyDict:
        """Memberships of every entity with a non-zero score, by name."""
        self.sets.truncated = False
        return self.execute(query, leaf_sets)
