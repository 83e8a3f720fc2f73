"""The graph context C of Algorithm 2: accumulated, de-duplicated, verbalised with templates.

C is a union over iterations (``C <- T_q ∪ P ∪ Q_a ∪ C``), kept in insertion order and in three
sections -- triplets, paths, query results -- as in the reference code. Verbalisation follows
the paper's templates: triplets as ``head -> relation -> tail`` with the tails of one
``(head, relation)`` merged (``h -> r -> t1 | t2``, as in the paper's case study), and paths as
their walk, where walks that differ only in their last node are merged the same way.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from kgrag.context.types import Chunk, Path, Triple
from kgrag.methods.byokg.query import QueryResult


def merge_triples(triples: list[Triple]) -> list[str]:
    """``h -> r -> t1 | t2`` per ``(head, relation)``, in first-seen order."""
    groups: dict[tuple[str, str], list[str]] = {}
    for t in triples:
        tails = groups.setdefault((t.head, t.relation), [])
        if t.tail not in tails:
            tails.append(t.tail)
    return [f"{h} -> {r} -> {' | '.join(tails)}" for (h, r), tails in groups.items()]


def _path_prefix(p: Path) -> str:
    """Verbalisation of the walk without its last node (the part merged walks share)."""
    full = p.verbalize()
    return full[: len(full) - len(p.nodes[-1])]


def merge_paths(paths: list[Path]) -> list[str]:
    """Walk verbalisations, merging walks that share everything but the last node."""
    groups: dict[str, list[str]] = {}
    for p in paths:
        if not p.relations:
            continue
        ends = groups.setdefault(_path_prefix(p), [])
        if p.nodes[-1] not in ends:
            ends.append(p.nodes[-1])
    return [prefix + " | ".join(ends) for prefix, ends in groups.items()]


def query_chunk(result: QueryResult) -> Chunk:
    """A query result as a retrieved item (a text chunk with the query in its metadata)."""
    digest = abs(hash(result.query)) % 10**10
    return Chunk(text=result.verbalize(), chunk_id=f"graph-query:{digest}",
                 metadata={"kind": "graph_query", "query": result.query, "error": result.error,
                           "rows": len(result.rows)})


@dataclass
class GraphContext:
    """Insertion-ordered, duplicate-free triplets, paths and query results."""

    triples: dict[tuple[str, str, str], Triple] = field(default_factory=dict)
    paths: dict[tuple, Path] = field(default_factory=dict)
    queries: dict[str, QueryResult] = field(default_factory=dict)

    def add_triples(self, triples: list[Triple]) -> int:
        """Add triples; returns how many were new."""
        before = len(self.triples)
        for t in triples:
            key = t.as_tuple()
            old = self.triples.get(key)
            if old is None or (t.score is not None and (old.score is None or t.score > old.score)):
                self.triples[key] = t
        return len(self.triples) - before

    def add_paths(self, paths: list[Path]) -> int:
        before = len(self.paths)
        for p in paths:
            self.paths.setdefault((p.nodes, p.relations, p.forward), p)
        return len(self.paths) - before

    def add_query(self, result: QueryResult) -> None:
        self.queries[result.query] = result

    def __len__(self) -> int:
        return len(self.triples) + len(self.paths) + len(self.queries)

    def entities(self) -> set[str]:
        """Every node name mentioned by a triple or a path (used for recall and answer lookup)."""
        names: set[str] = set()
        for h, _, t in self.triples:
            names.add(h)
            names.add(t)
        for p in self.paths.values():
            names.update(p.nodes)
        return names

    def lines(self) -> list[str]:
        """The verbalised context, one fact / walk / query result per line."""
        out = merge_triples(list(self.triples.values()))
        out += merge_paths(list(self.paths.values()))
        out += [q.verbalize() for q in self.queries.values()]
        return out

    def verbalize(self) -> str:
        return "\n".join(self.lines())

    def items(self) -> list:
        """Retrieved items for a RetrievalResult, in rank order with scores that never rise:
        the scored triples best first (ties in insertion order), then the unscored ones, the
        paths and the query chunks (no score). The verbalised context keeps C's insertion
        order."""
        triples = list(self.triples.values())
        scored = sorted((t for t in triples if t.score is not None),
                        key=lambda t: -float(t.score))  # type: ignore[arg-type]
        return (scored + [t for t in triples if t.score is None] + list(self.paths.values())
                + [query_chunk(q) for q in self.queries.values()])
