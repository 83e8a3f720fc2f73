"""KET-Retrieval (Algorithm 4): an entity channel on G_S and a keyword channel on G_K.

Budgets are in tokens of the index tokenizer and include the section headers, so the whole
context never exceeds ``L``:

* keyword channel, budget ``(1 - lambda) * L`` (all of ``L`` when the index has no skeleton):
  keywords ranked by cosine to the query (at most ``top_keywords``); walking down that list,
  each keyword's sub-chunks (most query-similar first, already-pooled ones skipped) join a
  candidate pool until it would exceed ``candidate_factor * budget`` tokens (the walk stops at
  the first overflow); the pool is ranked by cosine to the query and added until the budget
  (stopping at the first sub-chunk that does not fit);
* entity channel (GraphRAG local search), run only when ``lambda > 0`` and the skeleton is
  non-empty, with the budget the keyword channel left (``L`` minus its tokens; as in the
  reference code, unused keyword budget flows to the graph): the ``entity_top_k`` nearest
  entities, then their relationships (between two seeds first, by combined degree; then the
  others, by how many seeds the outside endpoint touches, then degree; at most
  ``relationship_top_k`` per seed), within ``entity_table_share`` of the channel; then the
  seeds' text units -- the sub-chunks of the chunks they were extracted from (rewiring) --
  ordered by seed rank, then by how many of the seed's relationships come from that chunk;
  sub-chunks the keyword channel already returned are not repeated (our choice: the two
  channels would otherwise spend budget on the same text twice).

The context lists the entity sections first, then the keyword sources.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from kgrag.context.types import Chunk
from kgrag.embed.similarity import matvec
from kgrag.methods.ketrag.config import KETRAGConfig
from kgrag.methods.ketrag.index import KETIndex
from kgrag.text.tokens import TextTokenizer

ENTITY_HEADER = "-----Entities-----\nid|entity|type|description|relationships"
RELATION_HEADER = "-----Relationships-----\nid|source|relation|target|description|weight"
ENTITY_SOURCES_HEADER = "-----Entity sources-----\nid|text"
KEYWORD_SOURCES_HEADER = "-----Keyword sources-----\nid|text"


def _one_line(text: str) -> str:
    return " ".join(text.replace("|", "/").split())


def source_line_tokens(index: KETIndex, sub: int, tokenizer: TextTokenizer) -> int:
    """Tokens of sub-chunk ``sub``'s ``id|text`` line, counted once per index and tokenizer.

    A line never changes, so its count is memoised on the index object (not saved): the
    tokenizer, the slowest step of a query, runs only for sub-chunks never shown before.
    """
    memo = index.__dict__.setdefault("_line_tokens", {}).get(tokenizer.name)
    if memo is None:
        memo = np.full(index.num_sub_chunks, -1, dtype=np.int64)
        index.__dict__["_line_tokens"][tokenizer.name] = memo
    if memo[sub] < 0:
        memo[sub] = tokenizer.count(_source_line(index, sub))
    return int(memo[sub])


def _top(scores: np.ndarray, n: int) -> np.ndarray:
    """Indices of the ``n`` highest scores, best first, ties to the lower index."""
    n = min(n, len(scores))
    if n <= 0:
        return np.empty(0, np.int64)
    if n < len(scores):
        part = np.argpartition(-scores, n - 1)[:n]
        # include every tie of the n-th score so the tie-break below is exact
        cut = scores[part].min()
        part = np.flatnonzero(scores >= cut)
    else:
        part = np.arange(len(scores))
    order = np.lexsort((part, -scores[part]))
    return part[order][:n].astype(np.int64)


@dataclass
class Section:
    """Lines of one context section and the items they came from (same order)."""

    header: str
    lines: list[str] = field(default_factory=list)
    items: list[Chunk] = field(default_factory=list)
    tokens: int = 0

    def render(self) -> str:
        return "\n".join([self.header, *self.lines]) if self.lines else ""


class _Budget:
    def __init__(self, tokenizer: TextTokenizer, limit: float) -> None:
        self.tok, self.limit, self.used = tokenizer, float(limit), 0

    def fits(self, n: int) -> bool:
        return self.used + n <= self.limit

    def open(self, section: Section) -> bool:
        """Charge the header once; False if even the header does not fit."""
        n = self.tok.count(section.header)
        if not self.fits(n):
            return False
        self.used += n
        section.tokens += n
        return True

    def add(self, section: Section, line: str, item: Chunk, cost: int | None = None) -> bool:
        n = self.tok.count(line) if cost is None else cost
        if not self.fits(n):
            return False
        self.used += n
        section.tokens += n
        section.lines.append(line)
        item.metadata["tokens"] = n
        section.items.append(item)
        return True


def _source_line(index: KETIndex, sub: int) -> str:
    return f"{index.sub_chunk_id(sub)}|{_one_line(index.sub_texts[sub])}"


def _source_item(index: KETIndex, sub: int, score: float, channel: str,
                 **extra: Any) -> Chunk:
    chunk = int(np.searchsorted(index.sub_indptr, sub, side="right") - 1)
    doc = index.documents[int(index.chunk_doc[chunk])]
    meta = {"channel": channel, "kind": "text", "sub_chunk": sub, "chunk": chunk,
            "doc_id": doc["doc_id"], "source_ids": [index.sub_chunk_id(sub)], **extra}
    if doc.get("metadata"):
        meta["doc_metadata"] = doc["metadata"]
    return Chunk(index.sub_texts[sub].strip(), index.sub_chunk_id(sub), float(score), meta)


def keyword_channel(index: KETIndex, query: np.ndarray, budget: float, cfg: KETRAGConfig,
                    tokenizer: TextTokenizer) -> tuple[Section, dict[str, Any]]:
    """Keyword seeds -> candidate sub-chunks (<= candidate_factor x budget) -> top by cosine."""
    section = Section(KEYWORD_SOURCES_HEADER)
    stats = {"seed_keywords": 0, "pool_sub_chunks": 0, "pool_tokens": 0}
    kg = index.keyword_graph
    meter = _Budget(tokenizer, budget)
    if budget <= 0 or kg.num_keywords == 0 or not meter.open(section):
        return Section(KEYWORD_SOURCES_HEADER), stats
    kw_scores = matvec(kg.vectors, query)
    sub_scores = matvec(index.sub_vectors, query)
    pool_limit = cfg.candidate_factor * budget
    taken = np.zeros(index.num_sub_chunks, dtype=bool)
    pool: list[int] = []
    via: dict[int, str] = {}
    pool_tokens = 0
    full = False
    for k in _top(kw_scores, cfg.top_keywords):
        subs = kg.sub_chunks_of(int(k))
        subs = subs[~taken[subs]]
        stats["seed_keywords"] += 1
        if subs.size == 0:
            continue
        subs = subs[np.lexsort((subs, -sub_scores[subs]))]
        for s in subs.tolist():
            t = int(index.sub_tokens[s])
            if pool_tokens + t > pool_limit:
                full = True
                break
            taken[s] = True
            pool.append(s)
            via[s] = kg.vocabulary[int(k)]
            pool_tokens += t
        if full:
            break
    stats.update(pool_sub_chunks=len(pool), pool_tokens=pool_tokens)
    pool_arr = np.asarray(pool, dtype=np.int64)
    if pool_arr.size:
        pool_arr = pool_arr[np.lexsort((pool_arr, -sub_scores[pool_arr]))]
    for s in pool_arr.tolist():
        item = _source_item(index, s, float(sub_scores[s]), "keyword", keyword=via[s])
        if not meter.add(section, _source_line(index, s), item, source_line_tokens(index, s,
                                                                                   tokenizer)):
            break
    if not section.lines:
        return Section(KEYWORD_SOURCES_HEADER), stats
    return section, stats


def entity_channel(index: KETIndex, query: np.ndarray, budget: float, cfg: KETRAGConfig,
                   tokenizer: TextTokenizer, exclude_sub_chunks: set[int] | None = None
                   ) -> tuple[list[Section], dict[str, Any]]:
    """GraphRAG-style local search on the skeleton within ``budget`` tokens.

    ``exclude_sub_chunks`` (those the keyword channel already returned) are not repeated as
    entity text units.
    """
    sk = index.skeleton
    kg = sk.graph
    stats: dict[str, Any] = {"seed_entities": []}
    if budget <= 0 or kg.num_nodes == 0:
        return [], stats
    ent_scores = matvec(index.entity_vectors, query)
    seeds = _top(ent_scores, cfg.entity_top_k)
    stats["seed_entities"] = [kg.node_names[s] for s in seeds.tolist()]
    degree = sk.degrees()
    table = _Budget(tokenizer, budget * cfg.entity_table_share)

    entities = Section(ENTITY_HEADER)
    if table.open(entities):
        for s in seeds.tolist():
            name = kg.node_names[s]
            line = (f"e{s}|{_one_line(name)}|{sk.entity_types[s]}|"
                    f"{_one_line(sk.entity_description(s))}|{int(degree[s])}")
            item = Chunk(line, f"e{s}", float(ent_scores[s]),
                         {"channel": "entity", "kind": "entity", "entity": name,
                          "source_ids": [index.sub_chunk_id(x) for x in
                                         index.sub_chunks_of(sk.entity_chunks[s]).tolist()]})
            if not table.add(entities, line, item):
                break

    relations = Section(RELATION_HEADER)
    seed_set = set(seeds.tolist())
    edges = kg.edges_ids(seeds, "both") if seeds.size else np.empty(0, np.int64)
    heads, tails = kg.heads[edges].astype(np.int64), kg.tails[edges].astype(np.int64)
    rank = degree[heads] + degree[tails]
    inside = np.array([h in seed_set and t in seed_set for h, t in zip(heads, tails)], bool)
    ordered_in = edges[inside][np.lexsort((edges[inside], -rank[inside]))]
    out_e, out_h, out_t, out_rank = edges[~inside], heads[~inside], tails[~inside], rank[~inside]
    outside_node = np.where(np.isin(out_h, seeds), out_t, out_h)
    links: dict[Any, Any] = {}
    for node, seed_end in zip(outside_node.tolist(), np.where(np.isin(out_h, seeds), out_h,
                                                              out_t).tolist()):
        links.setdefault(node, set()).add(seed_end)
    n_links = np.array([len(links[x]) for x in outside_node.tolist()], dtype=np.int64)
    ordered_out = out_e[np.lexsort((out_e, -out_rank, -n_links))][
        : cfg.relationship_top_k * len(seeds)]
    if len(edges) and table.open(relations):
        for e in np.concatenate([ordered_in, ordered_out]).tolist():
            h, r, t = int(kg.heads[e]), int(kg.rels[e]), int(kg.tails[e])
            line = (f"r{e}|{_one_line(kg.node_names[h])}|{kg.relation_names[r]}|"
                    f"{_one_line(kg.node_names[t])}|{_one_line(sk.edge_descriptions[e])}|"
                    f"{sk.edge_weights[e]:g}")
            item = Chunk(line, f"r{e}", float(sk.edge_weights[e]),
                         {"channel": "entity", "kind": "relationship",
                          "head": kg.node_names[h], "relation": kg.relation_names[r],
                          "tail": kg.node_names[t],
                          "source_ids": [index.sub_chunk_id(x) for x in
                                         index.sub_chunks_of(sk.edge_chunks[e]).tolist()]})
            if not table.add(relations, line, item):
                break

    sources = Section(ENTITY_SOURCES_HEADER)
    rest = _Budget(tokenizer, budget - table.used)
    if rest.open(sources):
        seen: set[int] = set(exclude_sub_chunks or ())
        done = False
        for s in seeds.tolist():
            seed_edges = edges[(heads == s) | (tails == s)]
            per_chunk: dict[int, int] = {}
            for e in seed_edges.tolist():
                for c in sk.edge_chunks[e]:
                    per_chunk[c] = per_chunk.get(c, 0) + 1
            subs = [(-per_chunk.get(c, 0), int(x), c) for c in sk.entity_chunks[s]
                    for x in index.sub_chunks_of([c]).tolist()]
            for _, sub, _c in sorted(subs):
                if sub in seen:
                    continue
                seen.add(sub)
                item = _source_item(index, sub, float(ent_scores[s]), "entity",
                                    entity=kg.node_names[s])
                if not rest.add(sources, _source_line(index, sub), item,
                                source_line_tokens(index, sub, tokenizer)):
                    done = True
                    break
            if done:
                break
    sections = [sec for sec in (entities, relations, sources) if sec.lines]
    return sections, stats


def retrieve_context(index: KETIndex, query: np.ndarray, cfg: KETRAGConfig,
                     tokenizer: TextTokenizer) -> tuple[list[Section], dict[str, Any]]:
    """Both channels merged: entity sections first, then keyword sources; total <= L tokens."""
    total = cfg.context_tokens
    has_graph = index.skeleton.graph.num_nodes > 0 and cfg.graph_share > 0
    keyword_budget = total * (1.0 - cfg.graph_share) if has_graph else total
    kw_section, kw_stats = keyword_channel(index, query, keyword_budget, cfg, tokenizer)
    ent_sections: list[Section] = []
    ent_stats: dict[str, Any] = {"seed_entities": []}
    if has_graph:
        taken = {int(i.metadata["sub_chunk"]) for i in kw_section.items}
        ent_sections, ent_stats = entity_channel(index, query, total - kw_section.tokens, cfg,
                                                 tokenizer, exclude_sub_chunks=taken)
    sections = [*ent_sections, *([kw_section] if kw_section.lines else [])]
    stats = {
        "keyword_budget": keyword_budget,
        "keyword_tokens": kw_section.tokens,
        "entity_budget": (total - kw_section.tokens) if has_graph else 0,
        "entity_tokens": sum(s.tokens for s in ent_sections),
        **kw_stats,
        **ent_stats,
    }
    stats["context_tokens"] = stats["keyword_tokens"] + stats["entity_tokens"]
    return sections, stats
