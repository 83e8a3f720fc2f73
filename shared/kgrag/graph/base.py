"""The GraphStore protocol: the graph operations every backend implements.

Methods talk to a graph only through these operations, so the same method runs on the in-memory
:class:`~kgrag.graph.memory.KnowledgeGraph` and on a database store (Neo4j, FalkorDB), where each
operation is pushed down as one parameterised read query. The protocol speaks *names*; the
in-memory graph additionally offers the same operations on integer ids and numpy arrays
(``*_ids`` methods) for hot paths.

Directions: ``"out"`` follows stored edges head -> tail, ``"in"`` follows them tail -> head,
``"both"`` does either.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import (
    Any,
    Iterable,
    Iterator,
    Literal,
    Mapping,
    Protocol,
    Sequence,
    TypeGuard,
    runtime_checkable,
)

import numpy as np

from kgrag.context.types import Path, Triple
from kgrag.graph.annotations import GraphAnnotations

Direction = Literal["out", "in", "both"]
DIRECTIONS: tuple[str, ...] = ("out", "in", "both")

#: Suffixes / prefixes that mark a reversed relation in a written relation path.
INVERSE_SUFFIXES: tuple[str, ...] = ("_inv", "_inverse", "_reverse")
INVERSE_PREFIXES: tuple[str, ...] = ("~", "^")


def check_direction(direction: str) -> Direction:
    if direction not in DIRECTIONS:
        raise ValueError(f"direction must be one of {DIRECTIONS}, got {direction!r}")
    return direction  # type: ignore[return-value]


@dataclass(frozen=True)
class PathStep:
    """One step of a relation path: a relation name and the direction to traverse it."""

    relation: str
    direction: Direction = "out"

    def __post_init__(self) -> None:
        check_direction(self.direction)


def parse_relation_path(
    path: str | Sequence[str | PathStep], *, default_direction: Direction = "out"
) -> list[PathStep]:
    """Turn ``"r1 -> r2_inv"`` (or a list of names / steps) into :class:`PathStep` objects.

    A step written with an inverse marker (``r_inv``, ``r_inverse``, ``r_reverse``, ``~r``,
    ``^r``) is traversed ``"in"``; any other step uses ``default_direction``. Empty steps are
    rejected with ``ValueError`` rather than silently dropped.

    >>> parse_relation_path("directed_by -> starred_actors_inv")
    [PathStep(relation='directed_by', direction='out'), PathStep(relation='starred_actors', \
direction='in')]
    """
    check_direction(default_direction)
    if isinstance(path, str):
        raw: list[str | PathStep] = [p for p in re.split(r"\s*->\s*|\s*,\s*", path.strip())]
    else:
        raw = list(path)
    steps: list[PathStep] = []
    for item in raw:
        if isinstance(item, PathStep):
            steps.append(item)
            continue
        name = str(item).strip()
        if not name:
            raise ValueError(f"empty step in relation path {path!r}")
        direction: Direction = default_direction
        for prefix in INVERSE_PREFIXES:
            if name.startswith(prefix) and len(name) > len(prefix):
                name, direction = name[len(prefix):].strip(), "in"
                break
        else:
            for suffix in INVERSE_SUFFIXES:
                if name.endswith(suffix) and len(name) > len(suffix):
                    name, direction = name[: -len(suffix)], "in"
                    break
        steps.append(PathStep(name, direction))
    if not steps:
        raise ValueError("a relation path needs at least one step")
    return steps


@runtime_checkable
class GraphStore(Protocol):
    """Operations a graph backend offers to the methods (all read-only).

    Besides the operations, a store says what it knows about its names (each may be empty --
    database stores hold only what their constructor was given): ``relation_labels`` and
    ``relation_descriptions`` (what embedders and prompts read for a relation, see
    :func:`kgrag.text.relations.relation_texts`), ``aliases`` (node name -> other names, for
    entity linking) and ``annotations`` (node types and source chunks,
    :class:`~kgrag.graph.annotations.GraphAnnotations`). Methods read them as plain attributes.
    """

    #: True when :meth:`run_cypher` exists and runs read-only openCypher.
    supports_cypher: bool

    @property
    def relation_labels(self) -> Mapping[str, Sequence[str]]:
        """relation name -> its labels and aliases (``{"P57": ["director"]}``); may be empty."""

    @property
    def relation_descriptions(self) -> Mapping[str, str]:
        """relation name -> a sentence describing it; may be empty."""

    @property
    def aliases(self) -> Mapping[str, Sequence[str]]:
        """node name -> its other names (linked to the node); may be empty."""

    @property
    def annotations(self) -> GraphAnnotations:
        """Node types / properties and source chunks of the graph's facts; may be empty."""

    def counts(self) -> dict[str, int]:
        """``{"nodes": ..., "edges": ..., "relations": ...}``."""

    def has_node(self, name: str) -> bool: ...

    def iter_node_names(self, batch_size: int = 10_000) -> Iterator[str]:
        """Every node name, streamed (for building local link indexes)."""

    def list_relations(self) -> list[str]:
        """Every relation name."""

    def one_hop(
        self,
        nodes: Iterable[str],
        *,
        direction: Direction = "both",
        relations: Iterable[str] | None = None,
        limit: int | None = None,
    ) -> list[Triple]:
        """Edges touching ``nodes`` in ``direction``, optionally only of ``relations``."""

    def follow_path(
        self,
        sources: Iterable[str],
        path: str | Sequence[str | PathStep],
        *,
        fan_out: int | None = None,
        max_paths: int | None = None,
    ) -> list[Path]:
        """Complete walks from ``sources`` that follow the relation path step by step."""

    def shortest_paths(
        self,
        sources: Iterable[str],
        targets: Iterable[str],
        *,
        max_hops: int = 3,
        directed: bool = False,
        max_paths: int | None = None,
    ) -> list[Path]:
        """One shortest path to each reachable target from its nearest source."""

    def k_hop_subgraph(
        self,
        nodes: Iterable[str],
        *,
        hops: int = 2,
        direction: Direction = "both",
        max_edges: int | None = None,
    ) -> list[Triple]:
        """Edges traversed by a BFS of ``hops`` levels from ``nodes``."""

    def schema_summary(self, max_relations: int = 50) -> str:
        """A compact text description of relations (with counts and examples) for LLM prompts."""

    def degree(self, nodes: Iterable[str], *, direction: Direction = "both") -> dict[str, int]: ...


@runtime_checkable
class CypherRunner(Protocol):
    """A graph that runs read-only openCypher (``supports_cypher`` is True): what ByoKG-RAG's
    query step needs. Rows are mappings; a result may say it was cut at ``limit``
    (``truncated``, see :class:`~kgrag.graph.cypher.store.CypherRows`)."""

    supports_cypher: bool

    def run_cypher(self, query: str, params: Mapping[str, Any] | None = None
                   ) -> Sequence[Mapping[str, Any]]: ...


@runtime_checkable
class CypherStore(GraphStore, CypherRunner, Protocol):
    """What a database store adds to :class:`GraphStore`
    (:class:`~kgrag.graph.cypher.store.CypherGraphStore`: Neo4j, FalkorDB): parameterised
    query execution with a row budget and a timeout, the node/relation mapping its queries are
    written against, node lookups in bulk, and the database's own search indexes (for entity
    linking, :mod:`kgrag.linking.database`)."""

    #: label of entity nodes (``None``: any node), the property holding a node's name
    node_label: str | None
    name_property: str
    #: ``None``: each relation is a relationship type; else every edge is one relationship of
    #: ``relationship_type`` with the relation name in this property
    relation_property: str | None
    relationship_type: str

    def run_cypher(self, query: str, params: Mapping[str, Any] | None = None, *,
                   limit: int = 100, timeout: float | None = 10.0
                   ) -> Sequence[Mapping[str, Any]]: ...

    def existing_nodes(self, names: Iterable[str]) -> list[str]:
        """The given names that are nodes of the graph (one query)."""

    def search_indexes(self) -> list[Any]:
        """Usable full-text / vector indexes on the name property
        (:class:`~kgrag.graph.cypher.store.SearchIndex`)."""

    def fulltext_search(self, index: Any, tokens: Sequence[str], limit: int
                        ) -> list[tuple[str, float]]: ...

    def vector_search(self, index: Any, vector: Sequence[float], k: int, *,
                      breadth: int | None = None) -> list[tuple[str, float]]: ...


@runtime_checkable
class IdIndexedGraph(GraphStore, Protocol):
    """A :class:`GraphStore` that also answers by integer ids over CSR arrays: what the methods'
    fast paths need (the in-memory :class:`~kgrag.graph.memory.KnowledgeGraph` is one).

    Nodes and relations are numbered ``0..n-1`` (``node_names[i]`` / ``node_index[name]``);
    edge ``e`` is ``(heads[e], rels[e], tails[e])``, sorted by head with ``out_indptr`` as the
    CSR offsets and ``in_order`` / ``in_indptr`` the same by tail. Methods test
    ``isinstance(store, IdIndexedGraph)`` and fall back to the name-level protocol otherwise,
    so a new store with these members gets the fast paths with no change to a method.
    """

    node_names: list[str]
    relation_names: list[str]
    node_index: dict[str, int]
    relation_index: dict[str, int]
    node_descriptions: dict[str, str]
    heads: np.ndarray
    rels: np.ndarray
    tails: np.ndarray
    out_indptr: np.ndarray
    in_order: np.ndarray
    in_indptr: np.ndarray

    @property
    def num_nodes(self) -> int: ...

    @property
    def num_edges(self) -> int: ...

    @property
    def num_relations(self) -> int: ...

    def node_id(self, name: str) -> int: ...

    def relation_id(self, name: str) -> int: ...

    def node_ids(self, names: Iterable[str], *, missing: str = "ignore") -> np.ndarray: ...

    def edge_triples(self, edge_ids: Iterable[int]) -> list[Triple]: ...

    def degree_ids(self, nodes: np.ndarray, direction: Direction = "both") -> np.ndarray: ...

    def edges_ids(self, nodes: np.ndarray, direction: Direction = "both",
                  relations: Iterable[str | int] | None = None) -> np.ndarray: ...

    def neighbors_ids(self, nodes: np.ndarray, direction: Direction = "both") -> np.ndarray: ...

    def incident_ids(self, nodes: np.ndarray, *, self_loops_once: bool = True
                     ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]: ...

    def incident_ids_and_relations(self, nodes: np.ndarray, *, self_loops_once: bool = True
                                   ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray,
                                              np.ndarray]: ...

    def follow_path_ids(self, sources: np.ndarray, steps: Sequence[tuple[int, Direction]], *,
                        fan_out: int | None = None, max_paths: int | None = None
                        ) -> tuple[np.ndarray, np.ndarray, np.ndarray]: ...

    # the two array primitives the methods' kernels build on (see kgrag.graph.traversal)
    def _edges_one_direction(self, nodes: np.ndarray, reverse: bool,
                             rel_ids: np.ndarray | None) -> tuple[np.ndarray, np.ndarray]:
        """(edge ids, owner index into ``nodes``) of the edges leaving (``reverse``: entering)
        ``nodes``, optionally only of relation ids ``rel_ids``."""

    def _make_path(self, nodes: np.ndarray, edges: np.ndarray, forward: np.ndarray) -> Path:
        """The :class:`~kgrag.context.types.Path` of a walk given by ids."""


def runs_cypher(graph: object) -> TypeGuard[CypherRunner]:
    """Whether ``graph`` runs read-only openCypher (a :class:`CypherRunner` whose
    ``supports_cypher`` is True)."""
    return isinstance(graph, CypherRunner) and bool(graph.supports_cypher)


def is_cypher_store(graph: object) -> TypeGuard[CypherStore]:
    """Whether ``graph`` is a database store (:class:`CypherStore`) that runs Cypher."""
    return isinstance(graph, CypherStore) and bool(graph.supports_cypher)


@runtime_checkable
class TripleSource(Protocol):
    """A graph that can hand out all its triples and node names (the in-memory
    :class:`~kgrag.graph.memory.KnowledgeGraph`): what the database loader copies from,
    including isolated nodes, which have no triple."""

    node_names: list[str]

    @property
    def num_nodes(self) -> int: ...

    @property
    def num_edges(self) -> int: ...

    def triples(self) -> Iterator[Triple]: ...
