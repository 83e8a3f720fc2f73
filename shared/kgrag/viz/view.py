"""What to draw for one :class:`~kgrag.context.types.RetrievalResult`: nodes, edges and roles.

:func:`build_view` turns the ranked items of a result into a small drawable graph, the same for
every method, so the HTML and PNG renderers never look at method-specific types:

* ``Triple`` / ``Path`` / ``Subgraph`` items become *retrieved* edges (drawn solid), their
  endpoints *retrieved* nodes;
* ``ScoredEntity`` items (ByoKG-RAG's LLM-free candidates, GraphRAFT's nodes, UltRAG's fuzzy
  set) become *retrieved* nodes carrying their score; when a ``graph`` is given, each is tied
  to the question entities by one shortest path of at most ``connect_hops`` hops, drawn as
  *connecting* edges (dashed), one path from each question entity: they show how an entity
  relates to the question, and are not necessarily the route the method took (UltRAG, for
  one, scores a whole fuzzy set);
* ``Chunk`` items (KET-RAG text) are not graph elements: they are kept in ``view.chunks`` for
  the renderers to list beside the drawing;
* *question* entities (highlighted) come from ``question_entities`` when given, otherwise from
  the result's provenance: ``metadata["entities"]`` (ByoKG-RAG, GraphRAFT), the named nodes of
  SimGRAG's best match, or UltRAG's resolved query leaves.

Only the first ``max_items`` items are drawn, so a page stays readable.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from kgrag.context.types import Chunk, Path, RetrievalResult, ScoredEntity, Subgraph, Triple
from kgrag.graph.base import GraphStore, IdIndexedGraph

#: Node roles, in the order a node is promoted (a question entity stays one).
ROLE_INTERMEDIATE = "intermediate"
ROLE_RETRIEVED = "retrieved"
ROLE_QUESTION = "question"
_ROLE_RANK = {ROLE_INTERMEDIATE: 0, ROLE_RETRIEVED: 1, ROLE_QUESTION: 2}

#: Question entities each retrieved entity is connected to (one shortest-path search each).
MAX_CONNECTED_SOURCES = 5


@dataclass
class ViewNode:
    """A node to draw: its name, role, best score among the items it came from, best rank."""

    name: str
    role: str = ROLE_INTERMEDIATE
    score: float | None = None
    rank: int | None = None  # 1-based rank of the first item that holds it


@dataclass
class ViewEdge:
    """A stored edge ``head -relation-> tail``; ``retrieved`` False for connecting paths."""

    head: str
    relation: str
    tail: str
    retrieved: bool = True


@dataclass
class RetrievalView:
    """The drawable graph of one result (see the module docstring)."""

    question: str
    method: str
    nodes: dict[str, ViewNode] = field(default_factory=dict)
    edges: list[ViewEdge] = field(default_factory=list)
    chunks: list[Chunk] = field(default_factory=list)
    items_shown: int = 0
    items_total: int = 0

    @property
    def question_entities(self) -> list[str]:
        return [n.name for n in self.nodes.values() if n.role == ROLE_QUESTION]

    def add_node(self, name: str, role: str, score: float | None = None,
                 rank: int | None = None) -> ViewNode:
        node = self.nodes.get(name)
        if node is None:
            node = self.nodes[name] = ViewNode(name)
        if _ROLE_RANK[role] > _ROLE_RANK[node.role]:
            node.role = role
        if score is not None and (node.score is None or score > node.score):
            node.score = score
        if rank is not None and (node.rank is None or rank < node.rank):
            node.rank = rank
        return node

    def add_edge(self, triple: Triple, retrieved: bool, score: float | None = None,
                 rank: int | None = None) -> None:
        role = ROLE_RETRIEVED if retrieved else ROLE_INTERMEDIATE
        self.add_node(triple.head, role, score if retrieved else None, rank if retrieved else None)
        self.add_node(triple.tail, role, score if retrieved else None, rank if retrieved else None)
        for edge in self.edges:
            if (edge.head, edge.relation, edge.tail) == triple.as_tuple():
                edge.retrieved = edge.retrieved or retrieved
                return
        self.edges.append(ViewEdge(triple.head, triple.relation, triple.tail, retrieved))


def question_entities_of(result: RetrievalResult) -> list[str]:
    """The graph entities a result says the question mentions (empty when it does not say)."""
    meta = result.metadata or {}
    entities = meta.get("entities")
    if isinstance(entities, (list, tuple)) and all(isinstance(e, str) for e in entities):
        return list(dict.fromkeys(entities))
    found: list[str] = []
    # SimGRAG: where the best match put the pattern's named (not "UNKNOWN ...") nodes; lower
    # ranked matches may map a name elsewhere (a looser fit), so they do not count
    best = next((item for item in result.items if isinstance(item, Subgraph)), None)
    if best is not None:
        mapping = best.metadata.get("mapping") or {}
        found += [graph_name for pattern_name, graph_name in mapping.items()
                  if not str(pattern_name).upper().startswith("UNKNOWN")]
    leaves = meta.get("leaves")  # UltRAG: [[(name, membership), ...] per query leaf]
    if isinstance(leaves, list):
        for group in leaves:
            for entry in group or []:
                if isinstance(entry, (list, tuple)) and entry and isinstance(entry[0], str):
                    found.append(entry[0])
    return list(dict.fromkeys(found))


def _item_score(item: Any) -> float | None:
    score = getattr(item, "score", None)
    return float(score) if isinstance(score, (int, float)) else None


def build_view(result: RetrievalResult, graph: GraphStore | None = None, *, max_items: int = 15,
               question_entities: Sequence[str] | None = None, connect_hops: int = 3
               ) -> RetrievalView:
    """The :class:`RetrievalView` of ``result`` (see the module docstring).

    ``graph``: optional :class:`~kgrag.graph.memory.KnowledgeGraph` or any GraphStore with
    ``shortest_paths``; used only to connect retrieved entities to the question entities.
    """
    if max_items < 1:
        raise ValueError("max_items must be at least 1")
    view = RetrievalView(result.question, result.method, items_total=len(result.items))
    asked = list(question_entities) if question_entities is not None else \
        question_entities_of(result)
    for name in asked:
        view.add_node(name, ROLE_QUESTION)
    loose: list[str] = []  # entities retrieved without an edge
    shown = result.items[:max_items]
    view.items_shown = len(shown)
    for rank, item in enumerate(shown, start=1):
        score = _item_score(item)
        if isinstance(item, Triple):
            view.add_edge(item, True, score, rank)
        elif isinstance(item, Path):
            if len(item) == 0:
                view.add_node(item.source, ROLE_RETRIEVED, score, rank)
            for triple in item.triples():
                view.add_edge(triple, True, score, rank)
        elif isinstance(item, Subgraph):
            for triple in item.triples:
                view.add_edge(triple, True, score, rank)
        elif isinstance(item, ScoredEntity):
            view.add_node(item.name, ROLE_RETRIEVED, score, rank)
            loose.append(item.name)
        elif isinstance(item, Chunk):
            view.chunks.append(item)
    if graph is not None and asked and loose:
        _connect(view, graph, asked, loose, connect_hops)
    return view


def _connect(view: RetrievalView, graph: GraphStore, sources: list[str], targets: Iterable[str],
             max_hops: int) -> None:
    """Add one shortest path (as connecting edges) from the question entities to each target."""
    if isinstance(graph, IdIndexedGraph):  # drop names it does not hold instead of failing
        known = graph.node_index
        sources = [s for s in sources if s in known]
        targets = [t for t in targets if t in known]
    wanted = [t for t in dict.fromkeys(targets) if t not in sources]
    if not wanted or not sources:
        return
    for source in sources[:MAX_CONNECTED_SOURCES]:  # each question entity on its own: a
        try:                                        # joint search stops at the nearest one
            paths = graph.shortest_paths([source], wanted, max_hops=max_hops)
        except (KeyError, ValueError):  # a name the store does not hold: no connections
            continue
        for path in paths:
            for triple in path.triples():
                view.add_edge(triple, retrieved=False)
