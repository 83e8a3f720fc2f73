"""ByoKG-RAG's graph tools for agents (the LangChain / LlamaIndex toolkits only wrap these).

The paper's graph toolkit -- entity linking, one-hop neighbours, path following, shortest paths,
graph-query execution -- as plain functions an agent can call with strings. Each tool has a
structured form (returns kgrag result types) and a ``*_text`` form (returns the verbalised text
an LLM agent reads, with a clear message instead of an exception on bad input). Entity arguments
that are not exact node names are linked to the closest node, and the reply says so.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from kgrag.context.types import Path, ScoredEntity, Triple
from kgrag.errors import KgragError
from kgrag.graph.base import GraphStore, check_direction, runs_cypher
from kgrag.methods.byokg.context import merge_paths, merge_triples
from kgrag.methods.byokg.paths import RelationResolver, follow_metapath
from kgrag.methods.byokg.query import QueryResult, execute_query

MAX_LIMIT = 500


class GraphTools:
    """Agent-facing graph tools over a store, with an entity linker for fuzzy names.

    ``linker`` is anything with ``link(mention, top_m)`` (e.g. :class:`kgrag.linking.EntityLinker`
    or the one a :class:`~kgrag.methods.byokg.ByoKGRAG` built); ``None`` builds a fuzzy linker.
    """

    def __init__(self, graph: GraphStore, linker: Any = None, *, method: Any = None) -> None:
        self.graph = graph
        self._linker = linker
        self._method = method
        self.resolver = RelationResolver.from_graph(graph)

    @classmethod
    def from_method(cls, method: Any) -> "GraphTools":
        """Tools sharing a ByoKG-RAG method's graph and its (lazily built) linker."""
        return cls(method.graph, method=method)

    @property
    def linker(self) -> Any:
        if self._linker is None:
            if self._method is not None:
                self._linker = self._method.linker
            else:
                from kgrag.linking import EntityLinker

                self._linker = EntityLinker.from_graph(self.graph, mode="fuzzy")
        return self._linker

    @property
    def supports_cypher(self) -> bool:
        return runs_cypher(self.graph)

    # ------------------------------------------------------------------ structured
    def lookup_entity(self, name: str, top_m: int = 5) -> list[ScoredEntity]:
        """Graph nodes best matching ``name`` (exact first, then fuzzy/dense), best first."""
        if not str(name).strip():
            return []
        return list(self.linker.link(str(name), max(1, min(int(top_m), 50))))

    def resolve(self, name: str) -> tuple[str | None, str]:
        """``(node, note)``: the node itself if it exists, else its best link and a note."""
        if self.graph.has_node(name):
            return name, ""
        links = self.lookup_entity(name, 1)
        if not links:
            return None, f"No node matches {name!r}."
        best = links[0].name
        return best, f"{name!r} is not a node name; using the closest match {best!r}."

    def neighbors(self, entity: str, relation: str | None = None, direction: str = "both",
                  limit: int = 50) -> list[Triple]:
        """Edges of ``entity`` (optionally of one relation), stored direction kept."""
        node, _ = self.resolve(entity)
        if node is None:
            return []
        rels = None
        if relation:
            rel = self.resolver.resolve(relation)
            if rel is None:
                return []
            rels = [rel]
        return self.graph.one_hop([node], direction=check_direction(direction), relations=rels,
                                  limit=max(1, min(int(limit), MAX_LIMIT)))

    def follow_path(self, entity: str, path: str, max_paths: int = 50) -> list[Path]:
        """Walks from ``entity`` along ``"r1 -> r2"`` (both directions; ``~r`` = backwards)."""
        node, _ = self.resolve(entity)
        if node is None:
            return []
        return follow_metapath(self.graph, [node], path, resolver=self.resolver,
                               max_paths=max(1, min(int(max_paths), MAX_LIMIT))).paths

    def shortest_path(self, source: str, target: str, max_hops: int = 4) -> list[Path]:
        a, _ = self.resolve(source)
        b, _ = self.resolve(target)
        if a is None or b is None:
            return []
        return self.graph.shortest_paths([a], [b], max_hops=max(1, min(int(max_hops), 6)))

    def run_cypher(self, query: str) -> QueryResult:
        """Execute a read-only openCypher query (refused if it could write)."""
        return execute_query(self.graph, query)

    # ------------------------------------------------------------------ text for agents
    def lookup_entity_text(self, name: str, top_m: int = 5) -> str:
        links = self.lookup_entity(name, top_m)
        if not links:
            return f"No node matches {name!r}."
        return "\n".join(f"{link.name} (score {link.score:.2f}, {link.source})" for link in links)

    def neighbors_text(self, entity: str, relation: str | None = None, direction: str = "both",
                       limit: int = 50) -> str:
        try:
            node, note = self.resolve(entity)
            if node is None:
                return note
            if relation and self.resolver.resolve(relation) is None:
                known = ", ".join(self.resolver.relations[:50])
                return f"Unknown relation {relation!r}. Relations: {known}"
            triples = self.neighbors(node, relation, direction, limit)
        except (KgragError, ValueError) as exc:
            return f"Error: {exc}"
        body = "\n".join(merge_triples(triples)) or f"{node} has no such edges."
        return f"{note}\n{body}".strip()

    def follow_path_text(self, entity: str, path: str, max_paths: int = 50) -> str:
        try:
            node, note = self.resolve(entity)
            if node is None:
                return note
            found = follow_metapath(self.graph, [node], path, resolver=self.resolver,
                                    max_paths=max(1, min(int(max_paths), MAX_LIMIT)))
        except (KgragError, ValueError) as exc:
            return f"Error: {exc}"
        lines = [note] if note else []
        if not found.paths:
            return "\n".join(lines + [f"The path {path!r} cannot be followed from {node}."])
        if found.partial:
            lines.append(f"Only the prefix {found.executed!r} of {path!r} could be followed.")
        return "\n".join(lines + merge_paths(found.paths))

    def shortest_path_text(self, source: str, target: str, max_hops: int = 4) -> str:
        try:
            a, note_a = self.resolve(source)
            b, note_b = self.resolve(target)
            if a is None or b is None:
                return " ".join(n for n in (note_a, note_b) if n)
            paths = self.shortest_path(a, b, max_hops)
        except (KgragError, ValueError) as exc:
            return f"Error: {exc}"
        notes = " ".join(n for n in (note_a, note_b) if n)
        body = "\n".join(p.verbalize() for p in paths) or f"No path of at most {max_hops} hops."
        return f"{notes}\n{body}".strip()

    def run_cypher_text(self, query: str) -> str:
        return self.run_cypher(query).verbalize()


@dataclass(frozen=True)
class ToolArg:
    """One argument of an agent tool: its type, default (``REQUIRED`` if none) and description."""

    type: Any  # a class or a union such as ``str | None``
    description: str
    default: Any = ...


@dataclass(frozen=True)
class ToolSpec:
    """What an agent framework needs to expose one :class:`GraphTools` text tool: the name,
    the ``GraphTools`` method, the description and the described arguments (in call order)."""

    name: str
    function: str
    description: str
    args: dict[str, ToolArg]
    needs_cypher: bool = False


_ENTITY = ToolArg(str, "A node name; a name that is not exact is linked to the closest node "
                       "(the reply says which).")

#: The graph tools, one spec each; the LangChain and LlamaIndex adapters build their tools and
#: argument schemas from these, so both frameworks describe the arguments the same way.
TOOL_SPECS: tuple[ToolSpec, ...] = (
    ToolSpec("kg_lookup_entity", "lookup_entity_text",
             "Find the knowledge-graph nodes whose names best match a name (exact, fuzzy or "
             "semantic match). Use it before the other tools.",
             {"name": ToolArg(str, "The entity name or mention to look up, e.g. 'Satoshi Kon'."),
              "top_m": ToolArg(int, "How many matching nodes to return (1-50).", 5)}),
    ToolSpec("kg_neighbors", "neighbors_text",
             "List the facts (head -> relation -> tail) around an entity, optionally only one "
             "relation.",
             {"entity": _ENTITY,
              "relation": ToolArg(str | None, "Only edges of this relation (exact name from the "
                                              "graph); omit for every relation.", None),
              "direction": ToolArg(str, "'out' (entity is the head), 'in' (entity is the tail) "
                                        "or 'both'.", "both"),
              "limit": ToolArg(int, f"Maximum number of facts (1-{MAX_LIMIT}).", 50)}),
    ToolSpec("kg_follow_path", "follow_path_text",
             "Follow a relation path from an entity and return the walks found.",
             {"entity": _ENTITY,
              "path": ToolArg(str, "Relation names joined by ' -> ', e.g. 'directed_by -> "
                                   "born_in'. Each relation is followed in both directions; "
                                   "prefix one with '~' to follow it only backwards (tail to "
                                   "head)."),
              "max_paths": ToolArg(int, f"Maximum number of walks returned (1-{MAX_LIMIT}).",
                                   50)}),
    ToolSpec("kg_shortest_path", "shortest_path_text",
             "Find how two entities are connected: the shortest paths between them.",
             {"source": _ENTITY, "target": _ENTITY,
              "max_hops": ToolArg(int, "Longest path considered, in edges (1-6).", 4)}),
    ToolSpec("kg_cypher", "run_cypher_text",
             "Run one read-only openCypher query on the graph database; write clauses are "
             "refused and errors are returned as text.",
             {"query": ToolArg(str, "One read-only openCypher statement, e.g. \"MATCH (m "
                                    "{name: 'Paprika'})-[r]->(p) RETURN type(r), p.name\".")},
             needs_cypher=True),
)


def tool_specs(tools: GraphTools) -> list[ToolSpec]:
    """The specs of the tools ``tools`` can run (Cypher only on Cypher-capable stores)."""
    return [s for s in TOOL_SPECS if tools.supports_cypher or not s.needs_cypher]
