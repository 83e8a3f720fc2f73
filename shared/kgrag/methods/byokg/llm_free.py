"""ByoKG-RAG without an LLM: n-gram entities, scored triplets, 2-hop paths, ranked candidates.

A cheap retriever built from the same graph tools (not in the paper, which always has an LLM):

1. **Entities** -- question n-grams that name graph nodes
   (:func:`kgrag.linking.extract_mentions`: bracketed spans, exact/alias n-grams, then close
   fuzzy matches), each linked to its top node(s).
2. **Triplets** -- the text-based top-k over the whole graph (``cos(q,h)+cos(q,r)+cos(q,t)``).
3. **Paths** -- every walk of up to ``hops`` edges (both directions, no immediate backtrack) from
   the linked entities, scored by the mean similarity of the question -- with the entity
   mentions cut out, so the relation words dominate -- to the walk's relations, times the link
   score of the entity the walk starts from (ties go to the shorter walk); the best walk per end
   node is kept. The link score makes a walk only as trustworthy as its start: an exact or
   bracketed mention links with score 1, while a fuzzy n-gram match ("who's the" -> the film
   *Who's the Man?*, 0.95) scores below 1, so its walks no longer tie with, or beat by a hair,
   the walks of the entity the question is about. Negative similarities count as 0, so the
   product stays a score in [0, 1] that cannot reward a weak link. With the mean, a 2-edge walk
   beats its own 1-edge prefix only when its second relation matches the question better than
   its first; rules that reward longer walks (sum of relation vectors, the walk as one phrase)
   win 2-hop questions but lose more 1-hop ones (``docs/byokg.md``, MetaQA analysis).
4. **Answer candidates** -- the walks' end nodes ranked by that score, as
   :class:`~kgrag.context.types.ScoredEntity` items.

Candidates and walks share one score scale (the walk score, in [0, 1]); the triplets of step 2
have their own (a sum of three cosines), so :class:`LLMFreeResult` keeps them in their own
list and ``ByoKGRAG.retrieve`` returns them apart from the ranked candidates and walks
(``metadata["triples"]``, see docs/byokg.md).

On a database store the ``hops``-hop neighbourhood of the linked entities is materialised as a
small local :class:`KnowledgeGraph` first, so the same vectorised code runs.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from kgrag.context.types import Path, ScoredEntity, Triple
from kgrag.graph.base import GraphStore, IdIndexedGraph
from kgrag.graph.memory import KnowledgeGraph

#: Bound on enumerated walks (hub entities such as a genre reach tens of thousands).
MAX_WALKS = 300_000


@dataclass
class LLMFreeResult:
    entities: list[ScoredEntity] = field(default_factory=list)
    triples: list[Triple] = field(default_factory=list)
    paths: list[Path] = field(default_factory=list)
    candidates: list[ScoredEntity] = field(default_factory=list)


def scored_walks(kg: IdIndexedGraph, seeds: np.ndarray, rel_sim: np.ndarray, hops: int = 2
                 ) -> tuple[list[np.ndarray], list[np.ndarray], list[np.ndarray], np.ndarray]:
    """All walks of 1..``hops`` edges from ``seeds``; returns per-length node/edge/forward arrays
    stacked into one list of walks plus each walk's score (mean relation similarity)."""
    walks_nodes, walks_edges, walks_fwd, walk_scores = [], [], [], []
    nodes = seeds.reshape(-1, 1).astype(np.int64)
    edges = np.empty((len(seeds), 0), np.int64)
    fwd = np.empty((len(seeds), 0), bool)
    rel_sum = np.zeros(len(seeds))
    for length in range(1, hops + 1):
        if len(nodes) == 0:
            break
        # a self-loop is walked both ways, as an out-edge and as an in-edge; the relation ids
        # come from the same pass over the adjacency
        step = kg.incident_ids_and_relations(nodes[:, -1], self_loops_once=False)
        if edges.shape[1]:
            keep = step[1] != edges[step[0], -1]  # no immediate backtrack over the same edge
            step = tuple(a[keep] for a in step)
        owner, e, other, f, rel = (a[:MAX_WALKS] for a in step)
        nodes = np.column_stack([nodes[owner], other])
        edges = np.column_stack([edges[owner], e])
        fwd = np.column_stack([fwd[owner], f])
        rel_sum = rel_sum[owner] + rel_sim[rel]
        walks_nodes.append(nodes)
        walks_edges.append(edges)
        walks_fwd.append(fwd)
        walk_scores.append(rel_sum / length)
    scores = np.concatenate(walk_scores) if walk_scores else np.zeros(0)
    return walks_nodes, walks_edges, walks_fwd, scores


#: per extra hop and per change of direction along a walk, the walk score is multiplied by this:
#: small enough to reorder only walks whose scores (nearly) tie, so that of two walks with the
#: same mean relation similarity the shorter, then the straighter, ranks first and *scores*
#: higher ("Bob -> reports_to -> Alice" above "... -> reports_to -> Hannah" above
#: "... <- reports_to <- Carol"), instead of three answers at one score
TIE_BREAK = 0.999


def tie_break_factor(lengths: np.ndarray, fwd_by_len: list[np.ndarray]) -> np.ndarray:
    """:data:`TIE_BREAK` to the power (hops - 1 + direction changes), per walk (walks stacked
    by length as :func:`scored_walks` returns them)."""
    turns = np.concatenate([np.count_nonzero(f[:, 1:] != f[:, :-1], axis=1)
                            for f in fwd_by_len]) if fwd_by_len else np.zeros(0, np.int64)
    return np.power(TIE_BREAK, lengths - 1 + turns)


def llm_free_retrieve(
    question: str,
    graph: GraphStore,
    *,
    linker: Any,
    scorer: Any,
    top_m: int = 1,
    text_top_k: int = 10,
    hops: int = 2,
    max_paths: int = 100,
    max_candidates: int = 50,
) -> LLMFreeResult:
    from kgrag.linking import extract_mentions

    result = LLMFreeResult()
    mentions = extract_mentions(question, linker, top_m=top_m)
    seen: dict[str, ScoredEntity] = {}
    for m in mentions:
        for link in m.links[:max(top_m, 1)]:
            if link.name not in seen:
                seen[link.name] = ScoredEntity(link.name, link.score, link.source,
                                               metadata={"mention": m.text})
    result.entities = list(seen.values())
    qvec = scorer.query_vector(question)
    result.triples = scorer.top_k(qvec, text_top_k, seeds=list(seen))
    if not seen:
        return result
    # Relations are scored against the question with its entity mentions masked: the names
    # otherwise dominate the embedding ("Who directed Tokyo Godfathers?" -> "Who directed ?").
    masked = question
    for m in sorted(mentions, key=lambda m: -m.start):
        masked = masked[:m.start] + masked[m.end:]
    rvec = scorer.query_vector(masked) if masked.strip() and masked != question else qvec
    if isinstance(graph, IdIndexedGraph):
        kg, rel_sim = graph, scorer.relation_similarities(rvec)
    else:
        local = graph.k_hop_subgraph(list(seen), hops=hops)
        if not local:
            return result
        kg = KnowledgeGraph.from_triples([t.as_tuple() for t in local])
        rel_sim = scorer.relation_similarities_for(kg.relation_names, rvec)
    seed_weight: dict[int, float] = {}  # node id -> best link score, in mention order
    for name, entity in seen.items():
        for node in kg.node_ids([name]).tolist():
            seed_weight[node] = max(seed_weight.get(node, 0.0), float(entity.score))
    seed_ids = np.fromiter(seed_weight, np.int64, len(seed_weight))
    nodes_by_len, edges_by_len, fwd_by_len, scores = scored_walks(kg, seed_ids, rel_sim, hops)
    if not len(scores):
        return result
    starts = np.concatenate([n[:, 0] for n in nodes_by_len])
    by_id = np.argsort(seed_ids)
    weights = np.fromiter(seed_weight.values(), float, len(seed_weight))
    scores = np.maximum(scores, 0.0) * weights[by_id[np.searchsorted(seed_ids[by_id], starts)]]
    lengths = np.concatenate([np.full(len(n), i + 1) for i, n in enumerate(nodes_by_len)])
    scores = scores * tie_break_factor(lengths, fwd_by_len)
    ends = np.concatenate([n[:, -1] for n in nodes_by_len])
    offsets = np.cumsum([0] + [len(n) for n in nodes_by_len])
    is_seed = np.isin(ends, seed_ids)
    # best walk per end node: highest score, then shorter, then first found
    order = np.lexsort((np.arange(len(scores)), lengths, -scores))
    order = order[~is_seed[order]]
    _, first = np.unique(ends[order], return_index=True)
    best = order[np.sort(first)]
    names = kg.node_names
    for w in best[:max_candidates].tolist():
        result.candidates.append(ScoredEntity(names[int(ends[w])], float(scores[w]), "llm_free",
                                              metadata={"hops": int(lengths[w])},
                                              show_score=False))
    for w in best[:max_paths].tolist():
        length = int(lengths[w])
        row = w - offsets[length - 1]
        path = kg._make_path(nodes_by_len[length - 1][row], edges_by_len[length - 1][row],
                             fwd_by_len[length - 1][row])
        result.paths.append(Path(path.nodes, path.relations, path.forward, float(scores[w])))
    return result
