"""Building an in-memory graph from a triples file or a networkx graph, and exporting it to
networkx: free functions in the style of networkx's ``read_edgelist``.

    kg = read_triples("movies.tsv")          # CSV / TSV / pipe-separated
    kg = from_networkx(g)                    # the relation in each edge's "relation"
    g = to_networkx(kg)
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Iterator, Sequence

from kgrag.errors import GraphFormatError
from kgrag.graph.bulk_csv import read_plain_triples
from kgrag.graph.io import iter_triples
from kgrag.graph.memory import KnowledgeGraph
from kgrag.text.names import normalize_name

if TYPE_CHECKING:  # pragma: no cover
    import networkx as nx

__all__ = ["from_networkx", "read_triples", "to_networkx"]


def read_triples(path: Any, *, sep: str | None = None,
                 columns: Sequence[int | str] | None = None, header: bool | None = None,
                 on_error: str = "raise", encoding: str = "utf-8",
                 **kwargs: Any) -> KnowledgeGraph:
    """The graph of the triples in a CSV / TSV / pipe-separated file (see
    :class:`kgrag.graph.io.TripleReader` for ``sep``, ``columns``, ``header``, ``on_error``);
    ``kwargs`` go to :class:`~kgrag.graph.memory.KnowledgeGraph` (``node_descriptions``,
    ``aliases``, ``relation_labels`` ...).

    Plain files (three unquoted fields per line) are read block-wise by
    :mod:`kgrag.graph.bulk_csv`; anything else goes through the line-by-line reader, which
    also produces the error messages. Both give the same graph. Whether the first row was a
    header, and the rule that decided (:func:`kgrag.graph.io.decide_header`), are logged and
    kept in ``kg.stats["header_row"]`` (0 or 1) and ``kg.header_rule``.
    """
    # the reader checks the arguments and that the file exists, for both paths
    triples = iter_triples(path, sep=sep, columns=columns, header=header, on_error=on_error,
                           encoding=encoding)
    if columns is None:
        plain = read_plain_triples(triples.path, sep=sep, header=header, encoding=encoding)
        if plain is not None:
            names, relation_names, heads, rels, tails = plain
            kg = KnowledgeGraph(names, relation_names, heads, rels, tails, **kwargs)
            kg.stats["skipped_records"] = 0
            next(iter(triples), None)  # the same header decision, for the record
            return _with_header_rule(kg, triples)
    kg = KnowledgeGraph.from_triples(triples, on_error="raise", source=str(path), **kwargs)
    kg.stats["skipped_records"] = triples.skipped
    return _with_header_rule(kg, triples)


def _with_header_rule(kg: KnowledgeGraph, triples: Any) -> KnowledgeGraph:
    kg.stats["header_row"] = int(triples.header_row)
    kg.header_rule = triples.header_rule if triples.header_rule != "not read yet" else \
        "empty file"
    return kg


def from_networkx(graph: nx.Graph, *, relation_key: str = "relation",
                  default_relation: str | None = None, label_key: str = "label",
                  **kwargs: Any) -> KnowledgeGraph:
    """Build from a networkx (Multi)DiGraph whose edges carry the relation in ``relation_key``.

    Node attributes ``description`` and ``aliases`` are picked up; an edge attribute
    ``label_key`` (``"label"``) names its relation in words (``relation_labels``). An edge
    without the relation attribute raises :class:`GraphFormatError` unless
    ``default_relation`` is given. An undirected graph is read with each edge in its stored
    orientation.
    """
    labels: dict[str, list[str]] = {}

    def edges() -> Iterator[tuple[Any, Any, Any]]:
        for u, v, data in graph.edges(data=True):
            rel = data.get(relation_key, default_relation)
            if rel is None:
                raise GraphFormatError(
                    f"edge ({u!r}, {v!r}) has no {relation_key!r} attribute; "
                    "pass relation_key= or default_relation="
                )
            label = data.get(label_key)
            if label:
                seen = labels.setdefault(normalize_name(rel), [])
                if str(label) not in seen:
                    seen.append(str(label))
            yield (u, rel, v)

    descriptions = {normalize_name(n): str(d["description"]) for n, d in graph.nodes(data=True)
                    if d.get("description")}
    aliases = {normalize_name(n): d["aliases"] for n, d in graph.nodes(data=True)
               if d.get("aliases")}
    kwargs.setdefault("node_descriptions", descriptions)
    kwargs.setdefault("aliases", aliases)
    kg = KnowledgeGraph.from_triples(edges(), **kwargs)
    if labels and "relation_labels" not in kwargs:
        kg.relation_labels = {r: names for r, names in labels.items() if r in kg.relation_index}
    isolated = [normalize_name(n) for n in graph.nodes if normalize_name(n) not in kg.node_index]
    if isolated:  # keep isolated nodes: they can still be linked and described
        edges_only = kg
        kg = KnowledgeGraph(kg.node_names + isolated, kg.relation_names, kg.heads, kg.rels,
                            kg.tails, node_descriptions=kg.node_descriptions,
                            relation_descriptions=kg.relation_descriptions, aliases=kg.aliases,
                            relation_labels=kg.relation_labels, annotations=kg.annotations,
                            _sorted_unique=True)
        kg.stats = dict(edges_only.stats)  # the input counts, not those of the rebuild
    return kg


def to_networkx(kg: KnowledgeGraph) -> nx.MultiDiGraph:
    """Export as a ``networkx.MultiDiGraph`` with the relation on each edge's ``relation``."""
    import networkx as nx

    g = nx.MultiDiGraph()
    for name in kg.node_names:
        attrs: dict[str, Any] = {}
        if name in kg.node_descriptions:
            attrs["description"] = kg.node_descriptions[name]
        if name in kg.aliases:
            attrs["aliases"] = list(kg.aliases[name])
        g.add_node(name, **attrs)
    names, rnames = kg.node_names, kg.relation_names
    labels = [kg.relation_labels.get(r, [None])[0] for r in rnames]
    g.add_edges_from(
        (names[h], names[t], {"relation": rnames[r]} if labels[r] is None
         else {"relation": rnames[r], "label": labels[r]})
        for h, r, t in zip(kg.heads.tolist(), kg.rels.tolist(), kg.tails.tolist())
    )
    return g
