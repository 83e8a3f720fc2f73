"""Path retrieval (paper §3.3): Follow-Paths over generated metapaths, and Shortest-Paths.

**Edge-direction policy.** A KG stores each fact once, in one direction, while questions walk it
either way: MetaQA stores ``movie -starred_actors-> actor`` and "what did X star in" walks it
backwards; the paper's own case studies show reversed triplets. So a metapath step written
plainly (``starred_actors``) is followed in **both** directions; a step written with an inverse
marker (``starred_actors_inv``, ``~starred_actors``, ``^starred_actors``) only tail -> head; and
``direction="out"`` reproduces the reference code (stored direction only). A walk never steps
straight back over the edge it just used (that would only return to where it came from, e.g.
``movie -> director -> same movie``) -- except a self-loop, which Freebase-style data follows
on purpose (PathQuestion-L's ``Robin_Hood -recording-> Robin_Hood -recording-> Robin_Hood``).

**Results.** Complete walks only, as in the paper. Because many walks often reach the same end
node (several co-actors lead to the same film), one walk is kept per ``(source, end node)`` --
the answer set is unchanged and the context stays small -- and at most ``max_paths`` per
metapath: walks from better-linked sources first, and within a source round-robin over the
walks' direction patterns (see :func:`_fair_order`). When a metapath cannot be executed in full
(a wrong last relation, a dead end), its **longest executable prefix** is returned instead and
marked partial: the entities it reaches are still useful context for the next iteration.

Relation names written by the LLM are resolved against the graph's relations exactly, then
ignoring case and punctuation (``"Starred Actors"`` -> ``starred_actors``), then by the words a
person writes for them (labels, the last segment of a path-like id: "place of birth" ->
``people.person.place_of_birth``; :mod:`kgrag.linking.relation_names`). A written name that
fits several relations (``genre`` in a Freebase-style graph) is followed along each of them (at
most ``MAX_COMBINATIONS`` combinations per path) and the walks are merged; unknown names make
the step -- and so the rest of the path -- unexecutable.
"""

from __future__ import annotations

import itertools
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Sequence

import numpy as np

from kgrag.context.types import Path
from kgrag.graph.base import (
    INVERSE_PREFIXES,
    INVERSE_SUFFIXES,
    Direction,
    IdIndexedGraph,
    PathStep,
    check_direction,
)

if TYPE_CHECKING:  # pragma: no cover
    from kgrag.graph.base import GraphStore

#: Walks enumerated per metapath before de-duplication (bounds memory on hub nodes).
MAX_WALKS = 200_000
#: Relation combinations followed for one metapath whose written names fit several relations.
MAX_COMBINATIONS = 16


def relation_key(name: str) -> str:
    """Case- and punctuation-insensitive key of a relation name."""
    return re.sub(r"[^0-9a-z]+", "_", name.casefold()).strip("_")


class RelationResolver:
    """Maps relation names written by an LLM to the graph's relation names."""

    def __init__(self, relations: Sequence[str], *, texts: Any = None) -> None:
        self.relations = list(relations)
        self._exact = set(self.relations)
        self._by_key: dict[str, str] = {}
        for rel in self.relations:
            self._by_key.setdefault(relation_key(rel), rel)
        #: a :class:`~kgrag.linking.relation_names.RelationTextIndex` (relations by their words)
        self.texts = texts

    @classmethod
    def from_graph(cls, graph: GraphStore) -> "RelationResolver":
        """A resolver over ``graph``'s relations that also knows their words and labels."""
        from kgrag.linking.relation_names import RelationTextIndex

        texts = RelationTextIndex.from_graph(graph)
        return cls(texts.names, texts=texts)

    def resolve_all(self, name: str) -> list[str]:
        """Every relation ``name`` may mean (one for an exact or key match)."""
        name = name.strip().strip("`'\"")
        if name in self._exact:
            return [name]
        found = self._by_key.get(relation_key(name))
        if found is not None:
            return [found]
        return self.texts.lookup(name) if self.texts is not None else []

    def resolve(self, name: str) -> str | None:
        found = self.resolve_all(name)
        return found[0] if found else None

    def step_choices(self, metapath: str, direction: Direction = "both"
                     ) -> tuple[list[list[PathStep]], bool]:
        """``(choices per executable step, complete)``, up to the first unknown relation."""
        check_direction(direction)
        choices: list[list[PathStep]] = []
        for raw in re.split(r"\s*->\s*", metapath.strip()):
            raw = raw.strip()
            if not raw:
                continue
            rels, step_dir = self.resolve_all(raw), direction
            if not rels:
                rels = self._resolve_inverse(raw)
                step_dir = "in"
            if not rels:
                return choices, False
            choices.append([PathStep(rel, step_dir) for rel in rels])
        return choices, bool(choices)

    def steps(self, metapath: str, direction: Direction = "both") -> tuple[list[PathStep], bool]:
        """``(executable steps, complete)``: the steps up to the first unknown relation (the
        first relation where a written name fits several)."""
        choices, complete = self.step_choices(metapath, direction)
        return [c[0] for c in choices], complete

    def _resolve_inverse(self, raw: str) -> list[str]:
        for prefix in INVERSE_PREFIXES:
            if raw.startswith(prefix) and len(raw) > len(prefix):
                return self.resolve_all(raw[len(prefix):])
        for suffix in INVERSE_SUFFIXES:
            if raw.endswith(suffix) and len(raw) > len(suffix):
                return self.resolve_all(raw[: -len(suffix)])
        return []


@dataclass
class FollowedPaths:
    """Walks found for one metapath; ``partial`` when only a prefix could be executed."""

    metapath: str
    executed: str
    paths: list[Path]
    partial: bool


def _walk_key(path: Path) -> tuple[str, str]:
    return (path.source, path.target)


def _backtracks(path: Path) -> bool:
    n, r, f = path.nodes, path.relations, path.forward
    return any(n[i] == n[i + 2] != n[i + 1] and r[i] == r[i + 1] and f[i] != f[i + 1]
               for i in range(len(r) - 1))


def _walks_kg(kg: IdIndexedGraph, sources: Sequence[str], steps: Sequence[PathStep],
              max_paths: int) -> list[Path]:
    """Fast path on the in-memory graph: vectorised walks, backtrack filter, dedupe, cap."""
    rank: dict[int, int] = {}
    for name in sources:
        i = kg.node_index.get(name)
        if i is not None and i not in rank:
            rank[i] = len(rank)
    if not rank:
        return []
    id_steps = [(kg.relation_index[s.relation], s.direction) for s in steps]
    nodes, edges, fwd = kg.follow_path_ids(np.fromiter(rank, np.int64), id_steps,
                                           max_paths=MAX_WALKS)
    if len(nodes) == 0:
        return []
    if edges.shape[1] > 1:
        again = edges[:, 1:] == edges[:, :-1]
        keep = ~np.any(again & (kg.heads[edges[:, 1:]] != kg.tails[edges[:, 1:]]), axis=1)
        nodes, edges, fwd = nodes[keep], edges[keep], fwd[keep]
    source_rank = np.fromiter((rank[s] for s in nodes[:, 0].tolist()), np.int64, len(nodes))
    order = np.lexsort((np.arange(len(nodes)), source_rank))
    nodes, edges, fwd = nodes[order], edges[order], fwd[order]
    _, first = np.unique(nodes[:, 0] * kg.num_nodes + nodes[:, -1], return_index=True)
    first = np.sort(first)
    if len(first) > max_paths:
        first = first[_fair_order(source_rank[order][first], fwd[first])][:max_paths]
    return [kg._make_path(nodes[i], edges[i], fwd[i]) for i in first.tolist()]


def _fair_order(source_rank: np.ndarray, forward: np.ndarray) -> np.ndarray:
    """Order for capping: best source first, and within a source round-robin over the walks'
    direction patterns, so one ambiguous hub (MetaQA's film "2010" is also the year 2010) cannot
    crowd the expected walks out of the first ``max_paths``."""
    pattern = (forward.astype(np.int64) << np.arange(forward.shape[1], dtype=np.int64)).sum(axis=1)
    group = source_rank.astype(np.int64) * (1 << forward.shape[1]) + pattern
    order = np.argsort(group, kind="stable")
    starts = np.r_[0, np.flatnonzero(np.diff(group[order])) + 1]
    rank_in_group = np.empty(len(group), np.int64)
    sizes = np.diff(np.r_[starts, len(group)])
    rank_in_group[order] = np.arange(len(group)) - np.repeat(starts, sizes)
    return np.lexsort((np.arange(len(group)), pattern, rank_in_group, source_rank))


def _walks_store(store: GraphStore, sources: Sequence[str], steps: Sequence[PathStep],
                 max_paths: int) -> list[Path]:
    """Any GraphStore: its follow_path, then the same filters on Path objects."""
    rank = {name: i for i, name in enumerate(dict.fromkeys(sources))}
    walks = [p for p in store.follow_path(list(rank), list(steps), max_paths=MAX_WALKS)
             if not _backtracks(p)]
    walks.sort(key=lambda p: rank.get(p.source, len(rank)))
    seen: set[tuple[str, str]] = set()
    out = []
    for p in walks:
        if _walk_key(p) not in seen:
            seen.add(_walk_key(p))
            out.append(p)
    if len(out) > max_paths and out:
        ranks = np.fromiter((rank.get(p.source, len(rank)) for p in out), np.int64, len(out))
        fwd = np.asarray([p.forward for p in out], dtype=bool).reshape(len(out), -1)
        out = [out[i] for i in _fair_order(ranks, fwd)[:max_paths].tolist()]
    return out


def _walks(store: GraphStore, sources: Sequence[str], steps: Sequence[PathStep],
           max_paths: int) -> list[Path]:
    if isinstance(store, IdIndexedGraph):
        return _walks_kg(store, sources, steps, max_paths)
    return _walks_store(store, sources, steps, max_paths)


def follow_metapath(
    store: GraphStore,
    sources: Sequence[str],
    metapath: str,
    *,
    resolver: RelationResolver,
    direction: Direction = "both",
    max_paths: int = 200,
) -> FollowedPaths:
    """Follow-Paths for one metapath from ranked ``sources`` (best-linked first).

    Returns the complete walks, or -- when there are none -- the walks of the longest
    executable prefix, flagged ``partial``.
    """
    choices, complete = resolver.step_choices(metapath, direction)
    if not choices or not sources:
        return FollowedPaths(metapath, "", [], True)
    if any(len(c) > 1 for c in choices):
        choices = _prune_choices(store, sources, choices)
    for length in range(len(choices), 0, -1):
        found, executed = [], []
        for steps in itertools.islice(itertools.product(*choices[:length]), MAX_COMBINATIONS):
            walks = _walks(store, sources, steps, max_paths)
            if walks:
                found.append(walks)
                executed.append(" -> ".join(
                    s.relation if s.direction != "in" or direction == "in" else f"~{s.relation}"
                    for s in steps))
        if found:
            walks = found[0] if len(found) == 1 else _merge_walks(found, max_paths)
            return FollowedPaths(metapath, " | ".join(executed), walks,
                                 not (complete and length == len(choices)))
    return FollowedPaths(metapath, "", [], True)


def _prune_choices(store: GraphStore, sources: Sequence[str], choices: list[list[PathStep]]
                   ) -> list[list[PathStep]]:
    """Keep, step by step, only the relations a written name fits that have an edge from the
    entities the previous steps reach (all of them when none has), so the combinations left
    to follow are the few the graph allows, not the product of every reading."""
    frontier = list(dict.fromkeys(sources))
    pruned: list[list[PathStep]] = []
    for options in choices:
        kept, reached = [], []
        for step in options:
            ends = [p.target for p in store.follow_path(frontier, [step], max_paths=MAX_WALKS)]
            if ends:
                kept.append(step)
                reached.extend(ends)
        if not kept:  # nothing continues: keep the step as written, the walk ends here
            pruned.append(options)
            pruned.extend(choices[len(pruned):])
            break
        pruned.append(kept)
        frontier = list(dict.fromkeys(reached))
    return pruned


def _merge_walks(groups: list[list[Path]], max_paths: int) -> list[Path]:
    """Walks of several relation combinations: one per (source, end), at most ``max_paths``,
    taken round-robin so every combination that found something is represented."""
    seen: set[tuple[str, str]] = set()
    out: list[Path] = []
    for row in itertools.zip_longest(*groups):
        for p in row:
            if p is not None and _walk_key(p) not in seen:
                seen.add(_walk_key(p))
                out.append(p)
    return out[:max_paths]


def shortest_paths(
    store: GraphStore,
    sources: Sequence[str],
    targets: Sequence[str],
    *,
    max_hops: int = 3,
    direction: Direction = "both",
    max_paths: int | None = 50,
) -> list[Path]:
    """Shortest-Paths(E, A): one shortest path to each reachable target from its nearest source.

    The paper names Dijkstra; on unit edge weights that is the breadth-first search the stores
    implement. Unreachable targets (or none) give ``[]``; ``max_hops`` bounds the search.
    """
    sources, targets = list(dict.fromkeys(sources)), list(dict.fromkeys(targets))
    if not sources or not targets:
        return []
    return store.shortest_paths(sources, targets, max_hops=max_hops,
                                directed=(direction == "out"), max_paths=max_paths)
