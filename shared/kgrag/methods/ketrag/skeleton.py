"""The knowledge-graph skeleton G_S: extracted records merged into a :class:`KnowledgeGraph`.

Merging rules (GraphRAG's, adapted to labelled edges):

* Entities are merged by name after whitespace-collapsing and case-folding; the first spelling
  seen (in chunk order, then record order) is kept. The type is the most frequent one.
* A relation whose endpoint was never declared creates that entity (type ``""``, no description).
  Self-relations are dropped.
* Relations are merged per ordered pair (source, target); the label is the most frequent one,
  the weight is the sum of the strengths.
* An entity's or relation's distinct descriptions are merged by one LLM summary call when there
  are several and a summarizer is given (GraphRAG's behaviour), else joined with spaces; the
  result is capped at :data:`MAX_MERGED_CHARS` characters.
* Provenance: every entity and edge keeps the ids of the chunks it was extracted from; retrieval
  rewires them to those chunks' sub-chunks (the paper's rewiring step).

Edge attributes are stored in arrays aligned with the graph's edge ids.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from kgrag.errors import GraphLoadError
from kgrag.graph.memory import KnowledgeGraph
from kgrag.graph.storage import load_graph, save_graph
from kgrag.methods.ketrag.extraction import ChunkExtraction

#: Longest merged description kept (about 400 tokens).
MAX_MERGED_CHARS = 2000

Summarizer = Callable[[str, str, list[str]], str]
"""``summarize(kind, name, descriptions) -> merged description``."""


def entity_key(name: str) -> str:
    return " ".join(name.split()).casefold()


@dataclass
class _Acc:
    name: str
    types: Counter = field(default_factory=Counter)
    labels: Counter = field(default_factory=Counter)
    descriptions: dict[str, None] = field(default_factory=dict)
    chunks: set[int] = field(default_factory=set)
    weight: float = 0.0


@dataclass
class Skeleton:
    """The skeleton graph plus per-entity and per-edge attributes and chunk provenance."""

    graph: KnowledgeGraph
    entity_types: list[str]
    entity_chunks: list[list[int]]
    edge_descriptions: list[str]
    edge_weights: np.ndarray
    edge_chunks: list[list[int]]

    @property
    def num_entities(self) -> int:
        return self.graph.num_nodes

    @classmethod
    def empty(cls) -> Skeleton:
        kg = KnowledgeGraph.from_arrays(np.empty(0, np.int32), np.empty(0, np.int32),
                                        np.empty(0, np.int32), [], [])
        return cls(kg, [], [], [], np.zeros(0), [])

    def entity_description(self, node: int) -> str:
        return self.graph.node_descriptions.get(self.graph.node_names[node], "")

    def degrees(self) -> np.ndarray:
        """Undirected degree of every entity (GraphRAG's entity rank)."""
        n = self.graph.num_nodes
        return (np.bincount(self.graph.heads, minlength=n)
                + np.bincount(self.graph.tails, minlength=n)).astype(np.int64)

    def save(self, directory: str | Path) -> None:
        root = Path(directory)
        save_graph(self.graph, root / "graph")
        np.save(root / "edge_weights.npy", np.asarray(self.edge_weights, np.float64),
                allow_pickle=False)
        (root / "skeleton.json").write_text(json.dumps({
            "entity_types": self.entity_types,
            "entity_chunks": self.entity_chunks,
            "edge_descriptions": self.edge_descriptions,
            "edge_chunks": self.edge_chunks,
        }, ensure_ascii=False), encoding="utf-8")

    @classmethod
    def load(cls, directory: str | Path) -> Skeleton:
        root = Path(directory)
        graph = load_graph(root / "graph")
        try:
            data = json.loads((root / "skeleton.json").read_text(encoding="utf-8"))
            weights = np.load(root / "edge_weights.npy", allow_pickle=False)
        except (OSError, ValueError) as exc:
            raise GraphLoadError(f"{root}: unreadable skeleton ({exc})") from None
        sk = cls(graph, list(data["entity_types"]), [list(c) for c in data["entity_chunks"]],
                 list(data["edge_descriptions"]), weights, [list(c) for c in data["edge_chunks"]])
        if not (len(sk.entity_types) == len(sk.entity_chunks) == graph.num_nodes
                and len(sk.edge_descriptions) == len(sk.edge_chunks) == len(weights)
                == graph.num_edges):
            raise GraphLoadError(f"{root}: skeleton attributes do not match its graph")
        return sk


def _merge_description(kind: str, name: str, descriptions: Sequence[str],
                       summarize: Summarizer | None) -> str:
    descs = [d for d in descriptions if d]
    if not descs:
        return ""
    if len(descs) == 1:
        return descs[0]
    if summarize is not None:
        merged = " ".join(str(summarize(kind, name, list(descs))).split())
    else:
        merged = " ".join(descs)
    return merged[:MAX_MERGED_CHARS]  # a runaway summary must not swamp the context tables


def build_skeleton(extractions: Sequence[ChunkExtraction],
                   summarize: Summarizer | None = None,
                   map_tasks: Callable[[list[Callable[[], str]]], list[str]] | None = None
                   ) -> Skeleton:
    """Merge per-chunk extractions into a :class:`Skeleton` (deterministic in chunk order).

    ``map_tasks`` runs the description-merging tasks (e.g. on the extraction worker pool);
    by default they run one after another.
    """
    entities: dict[str, _Acc] = {}
    relations: dict[tuple[str, str], _Acc] = {}

    def entity(name: str) -> _Acc:
        key = entity_key(name)
        if key not in entities:
            entities[key] = _Acc(name)
        return entities[key]

    for ext in sorted(extractions, key=lambda e: e.chunk_id):
        for rec in ext.records.entities:
            acc = entity(rec.name)
            if rec.type:
                acc.types[rec.type] += 1
            if rec.description:
                acc.descriptions.setdefault(rec.description)
            acc.chunks.add(ext.chunk_id)
        for rel in ext.records.relations:
            src, tgt = entity(rel.source), entity(rel.target)
            src.chunks.add(ext.chunk_id)
            tgt.chunks.add(ext.chunk_id)
            key = (entity_key(rel.source), entity_key(rel.target))
            if key[0] == key[1]:
                continue
            acc = relations.setdefault(key, _Acc(f"{src.name} -> {tgt.name}"))
            acc.labels[rel.label] += 1
            acc.weight += rel.strength
            if rel.description:
                acc.descriptions.setdefault(rel.description)
            acc.chunks.add(ext.chunk_id)

    keys = list(entities)
    node_ids = {k: i for i, k in enumerate(keys)}
    rel_keys = list(relations)
    tasks: list[Callable[..., str]] = [
        (lambda a=entities[k]: _merge_description("entity", a.name, list(a.descriptions),
                                                  summarize))
        for k in keys
    ] + [
        (lambda a=relations[k]: _merge_description("relation", a.name, list(a.descriptions),
                                                    summarize))
        for k in rel_keys
    ]
    merged = map_tasks(tasks) if map_tasks is not None else [t() for t in tasks]
    node_desc, rel_desc = merged[:len(keys)], merged[len(keys):]

    def most_common(counter: Counter) -> str:
        if not counter:
            return ""
        best = max(counter.values())
        return next(v for v, c in counter.items() if c == best)  # first seen among the ties

    labels = [most_common(relations[k].labels) for k in rel_keys]
    label_names = list(dict.fromkeys(labels))
    label_ids = {lab: i for i, lab in enumerate(label_names)}
    heads = np.array([node_ids[k[0]] for k in rel_keys], dtype=np.int64)
    tails = np.array([node_ids[k[1]] for k in rel_keys], dtype=np.int64)
    rels = np.array([label_ids[lab] for lab in labels], dtype=np.int64)
    names = [entities[k].name for k in keys]
    # different keys cannot collide after case-folding, but be safe
    if len(set(names)) != len(names):
        raise ValueError("entity names collide after normalisation")
    kg = KnowledgeGraph.from_arrays(
        heads, rels, tails, names, label_names,
        node_descriptions={names[i]: d for i, d in enumerate(node_desc) if d})
    # map our relation order onto the graph's sorted edge ids
    order = {(int(h), int(r), int(t)): i
             for i, (h, r, t) in enumerate(zip(kg.heads, kg.rels, kg.tails))}
    n_edges = kg.num_edges
    edge_desc = [""] * n_edges
    edge_weights = np.zeros(n_edges, dtype=np.float64)
    edge_chunks: list[list[int]] = [[] for _ in range(n_edges)]
    for j, k in enumerate(rel_keys):
        eid = order[(int(heads[j]), int(rels[j]), int(tails[j]))]
        edge_desc[eid] = rel_desc[j]
        edge_weights[eid] = relations[k].weight
        edge_chunks[eid] = sorted(relations[k].chunks)
    return Skeleton(
        graph=kg,
        entity_types=[most_common(entities[k].types) for k in keys],
        entity_chunks=[sorted(entities[k].chunks) for k in keys],
        edge_descriptions=edge_desc,
        edge_weights=edge_weights,
        edge_chunks=edge_chunks,
    )


def entity_embedding_texts(skeleton: Skeleton) -> list[str]:
    """``"name: description"`` per entity, the text embedded for seed-entity search (GraphRAG)."""
    return [f"{name}: {skeleton.graph.node_descriptions.get(name, '')}".rstrip(": ").strip()
            for name in skeleton.graph.node_names]

