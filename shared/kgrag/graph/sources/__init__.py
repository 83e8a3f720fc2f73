"""Graph sources from the RAG frameworks: the graphs people already built, as a KnowledgeGraph.

* :func:`~kgrag.graph.sources.llama_index.from_llama_index` -- any LlamaIndex
  ``PropertyGraphStore`` (``SimplePropertyGraphStore``, ``Neo4jPropertyGraphStore``, ...) or a
  ``PropertyGraphIndex``;
* :func:`~kgrag.graph.sources.langchain.from_graph_documents` -- LangChain ``GraphDocument``\\ s
  (what ``LLMGraphTransformer`` returns).

Both are exported by :mod:`kgrag.graph`.
Neither module imports its framework at import time; the framework's classes are only touched
when a graph is converted. Node types, properties, descriptions and the source chunks each node
and triple came from are kept (:class:`~kgrag.graph.annotations.GraphAnnotations`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

import numpy as np

from kgrag.graph.annotations import GraphAnnotations


def build_graph(cls: Any, node_names: Iterable[str], triples: Iterable[tuple[str, str, str]], *,
                node_descriptions: Mapping[str, str] | None = None,
                relation_labels: Mapping[str, Iterable[str]] | None = None,
                annotations: GraphAnnotations | None = None, **kwargs: Any) -> Any:
    """A ``cls`` (KnowledgeGraph) over ``triples`` that also keeps isolated ``node_names``.

    Names must already be normalised (:func:`~kgrag.graph.memory.normalize_name`).
    """
    nodes: dict[str, int] = {}
    for name in node_names:
        nodes.setdefault(name, len(nodes))
    relations: dict[str, int] = {}
    heads, rels, tails = [], [], []
    for h, r, t in triples:
        heads.append(nodes.setdefault(h, len(nodes)))
        rels.append(relations.setdefault(r, len(relations)))
        tails.append(nodes.setdefault(t, len(nodes)))
    kg = cls(list(nodes), list(relations), np.asarray(heads, np.int64),
             np.asarray(rels, np.int64), np.asarray(tails, np.int64),
             node_descriptions={n: d for n, d in (node_descriptions or {}).items() if n in nodes},
             **kwargs)
    attach(kg, relation_labels=relation_labels, annotations=annotations)
    return kg


def attach(kg: Any, *, relation_labels: Mapping[str, Iterable[str]] | None = None,
           annotations: GraphAnnotations | None = None) -> Any:
    """Set ``kg.relation_labels`` / ``kg.annotations`` (labels of unknown relations dropped)."""
    if relation_labels:
        labels = {}
        for rel, names in relation_labels.items():
            if rel in kg.relation_index:
                labels[rel] = [names] if isinstance(names, str) else list(names)
        kg.relation_labels = labels
    if annotations is not None:
        kg.annotations = annotations
    return kg
