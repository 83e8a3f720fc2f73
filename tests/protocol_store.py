"""A GraphStore that is not a KnowledgeGraph: the protocol only, over an in-memory graph.

Methods take any :class:`~kgrag.graph.base.GraphStore`; a database store (Neo4j, FalkorDB)
offers only the protocol's name-level operations, never the in-memory graph's ``*_ids`` fast
paths or its arrays. :class:`ProtocolStore` is such a store without a server: every protocol
member is written out (no ``__getattr__`` forwarding, so ``isinstance(store, GraphStore)``
holds on every Python version), each answered by the wrapped graph's own name-level operation,
and every call is counted so a test can see which path a method took.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Iterator, Mapping, Sequence

from kgrag import KnowledgeGraph
from kgrag.context.types import Path, Triple
from kgrag.graph.annotations import GraphAnnotations
from kgrag.graph.base import Direction, PathStep


class ProtocolStore:
    """Every :class:`~kgrag.graph.base.GraphStore` member, answered by ``kg``; ``calls`` counts
    the operations used (``calls["one_hop"]``, ``calls["k_hop_subgraph"]`` ...)."""

    supports_cypher = False

    def __init__(self, kg: KnowledgeGraph) -> None:
        self._kg = kg
        self.calls: Counter[str] = Counter()

    # the names' metadata, as a database store built with the same mappings would hold it
    @property
    def relation_labels(self) -> Mapping[str, Sequence[str]]:
        return self._kg.relation_labels

    @property
    def relation_descriptions(self) -> Mapping[str, str]:
        return self._kg.relation_descriptions

    @property
    def aliases(self) -> Mapping[str, Sequence[str]]:
        return self._kg.aliases

    @property
    def annotations(self) -> GraphAnnotations:
        return self._kg.annotations

    def counts(self) -> dict[str, int]:
        self.calls["counts"] += 1
        return self._kg.counts()

    def has_node(self, name: str) -> bool:
        self.calls["has_node"] += 1
        return self._kg.has_node(name)

    def iter_node_names(self, batch_size: int = 10_000) -> Iterator[str]:
        self.calls["iter_node_names"] += 1
        return iter(list(self._kg.node_names))

    def list_relations(self) -> list[str]:
        self.calls["list_relations"] += 1
        return self._kg.list_relations()

    def one_hop(self, nodes: Iterable[str], *, direction: Direction = "both",
                relations: Iterable[str] | None = None, limit: int | None = None
                ) -> list[Triple]:
        self.calls["one_hop"] += 1
        return self._kg.one_hop(nodes, direction=direction, relations=relations, limit=limit)

    def follow_path(self, sources: Iterable[str], path: str | Sequence[str | PathStep], *,
                    fan_out: int | None = None, max_paths: int | None = None) -> list[Path]:
        self.calls["follow_path"] += 1
        return self._kg.follow_path(sources, path, fan_out=fan_out, max_paths=max_paths)

    def shortest_paths(self, sources: Iterable[str], targets: Iterable[str], *,
                       max_hops: int = 3, directed: bool = False,
                       max_paths: int | None = None) -> list[Path]:
        self.calls["shortest_paths"] += 1
        return self._kg.shortest_paths(sources, targets, max_hops=max_hops, directed=directed,
                                       max_paths=max_paths)

    def k_hop_subgraph(self, nodes: Iterable[str], *, hops: int = 2,
                       direction: Direction = "both", max_edges: int | None = None
                       ) -> list[Triple]:
        self.calls["k_hop_subgraph"] += 1
        return self._kg.k_hop_subgraph(nodes, hops=hops, direction=direction,
                                       max_edges=max_edges)

    def schema_summary(self, max_relations: int = 50) -> str:
        self.calls["schema_summary"] += 1
        return self._kg.schema_summary(max_relations)

    def degree(self, nodes: Iterable[str], *, direction: Direction = "both") -> dict[str, int]:
        self.calls["degree"] += 1
        return self._kg.degree(nodes, direction=direction)
