"""Result types shared by every method: triples, paths, subgraphs, entities, chunks, answers.

They are plain frozen dataclasses holding *names* (strings), not graph ids, so they survive a
round-trip through any backend and convert to LangChain ``Document`` / LlamaIndex ``TextNode``
without knowing where they came from. ``score`` is method-specific (higher is better unless the
method's docstring says otherwise, e.g. SimGRAG's distance is kept in ``metadata``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class Triple:
    """One edge ``(head, relation, tail)``; ``score`` is optional (e.g. a retrieval score)."""

    head: str
    relation: str
    tail: str
    score: float | None = field(default=None, compare=False)

    def as_tuple(self) -> tuple[str, str, str]:
        return (self.head, self.relation, self.tail)

    def verbalize(self) -> str:
        return f"{self.head} -> {self.relation} -> {self.tail}"


@dataclass(frozen=True)
class Path:
    """A walk through the graph.

    ``nodes`` has one more element than ``relations``. ``forward[i]`` is True when the i-th edge
    points from ``nodes[i]`` to ``nodes[i+1]`` (as stored), False when it was traversed backwards.
    """

    nodes: tuple[str, ...]
    relations: tuple[str, ...]
    forward: tuple[bool, ...] = ()
    score: float | None = field(default=None, compare=False)

    def __post_init__(self) -> None:
        if len(self.nodes) != len(self.relations) + 1:
            raise ValueError("a Path needs exactly one more node than relations")
        if not self.forward:
            object.__setattr__(self, "forward", (True,) * len(self.relations))
        elif len(self.forward) != len(self.relations):
            raise ValueError("forward must have one flag per relation")

    def __len__(self) -> int:
        return len(self.relations)

    @property
    def source(self) -> str:
        return self.nodes[0]

    @property
    def target(self) -> str:
        return self.nodes[-1]

    def triples(self) -> list[Triple]:
        """The edges of the path as stored in the graph (head -> tail in storage direction)."""
        out = []
        for i, rel in enumerate(self.relations):
            a, b = self.nodes[i], self.nodes[i + 1]
            out.append(Triple(a, rel, b) if self.forward[i] else Triple(b, rel, a))
        return out

    def verbalize(self) -> str:
        """``a -> r1 -> b <- r2 <- c``: arrows show the stored edge direction."""
        parts = [self.nodes[0]]
        for i, rel in enumerate(self.relations):
            if self.forward[i]:
                parts.append(f"-> {rel} -> {self.nodes[i + 1]}")
            else:
                parts.append(f"<- {rel} <- {self.nodes[i + 1]}")
        return " ".join(parts)


def _triples_from_rows(rows: Any, node_names: Any, relation_names: Any) -> list[Triple]:
    """``[Triple(node_names[row[0]], relation_names[row[1]], node_names[row[2]]) for row in
    rows]`` (rows of ids, possibly with more items after these three), about 2x faster.

    For graph backends' hot paths, where building result objects costs more than the lookup.
    It fills each instance's ``__dict__`` exactly as the dataclass ``__init__`` would (same
    fields, same order, ``score=None``), so the objects are indistinguishable from constructed
    ones (equality, hashing, repr, pickling); the frozen ``__setattr__`` is only bypassed
    while filling. The name tables hold ``str``.
    """
    new = object.__new__
    out: list[Triple] = []
    append = out.append
    for row in rows:
        triple = new(Triple)
        fields = triple.__dict__
        fields["head"] = node_names[row[0]]
        fields["relation"] = relation_names[row[1]]
        fields["tail"] = node_names[row[2]]
        fields["score"] = None
        append(triple)
    return out


def _path_from_names(nodes: tuple[str, ...], relations: tuple[str, ...],
                     forward: tuple[bool, ...]) -> Path:
    """``Path(nodes, relations, forward)`` without ``__init__`` / ``__post_init__``, for graph
    backends' hot paths. The caller guarantees what ``__post_init__`` checks: tuples with
    ``len(nodes) == len(relations) + 1 == len(forward) + 1`` (``forward`` of bools)."""
    path = object.__new__(Path)
    fields = path.__dict__
    fields["nodes"] = nodes
    fields["relations"] = relations
    fields["forward"] = forward
    fields["score"] = None
    return path


@dataclass(frozen=True)
class Subgraph:
    """A set of triples retrieved together (e.g. one SimGRAG match), with an optional score."""

    triples: tuple[Triple, ...]
    score: float | None = field(default=None, compare=False)
    metadata: dict[str, Any] = field(default_factory=dict, compare=False, hash=False)

    @property
    def nodes(self) -> list[str]:
        seen: dict[str, None] = {}
        for t in self.triples:
            seen.setdefault(t.head)
            seen.setdefault(t.tail)
        return list(seen)

    def verbalize(self) -> str:
        return " ".join(f"({t.head}, {t.relation}, {t.tail})" for t in self.triples)


@dataclass(frozen=True)
class ScoredEntity:
    """A graph node with a score (linking similarity, fuzzy-set membership, ...)."""

    name: str
    score: float
    source: str = ""  # what produced it: "fuzzy", "dense", "alias", "exact", an executor, ...
    metadata: dict[str, Any] = field(default_factory=dict, compare=False, hash=False)
    #: whether :meth:`verbalize` shows the score (``"Paprika (1.000)"``); ``False`` for items
    #: whose score is a ranking detail that must not reach an answer prompt (the score is in
    #: the framework metadata either way)
    show_score: bool = field(default=True, compare=False, hash=False)

    def verbalize(self) -> str:
        return f"{self.name} ({self.score:.3f})" if self.show_score else self.name


@dataclass(frozen=True)
class Chunk:
    """A piece of source text (KET-RAG), with its id and optional score."""

    text: str
    chunk_id: str = ""
    score: float | None = field(default=None, compare=False)
    metadata: dict[str, Any] = field(default_factory=dict, compare=False, hash=False)

    def verbalize(self) -> str:
        return self.text


@dataclass
class Usage:
    """LLM cost of one question or one indexing run."""

    calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0

    @property
    def total_tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens

    def add(self, other: "Usage") -> "Usage":
        self.calls += other.calls
        self.prompt_tokens += other.prompt_tokens
        self.completion_tokens += other.completion_tokens
        return self

    def as_dict(self) -> dict[str, int]:
        return {
            "calls": self.calls,
            "prompt_tokens": self.prompt_tokens,
            "completion_tokens": self.completion_tokens,
            "total_tokens": self.total_tokens,
        }


RetrievedItem = Triple | Path | Subgraph | ScoredEntity | Chunk


@dataclass
class RetrievalResult:
    """What a method's retrieval step returns: scored items plus provenance and cost.

    ``items`` are in rank order (best first). ``context`` is the verbalized text an answer prompt
    would see. ``metadata`` carries method-specific provenance (generated artifacts, queries, ...).
    """

    question: str
    items: list[RetrievedItem] = field(default_factory=list)
    method: str = ""
    usage: Usage = field(default_factory=Usage)
    metadata: dict[str, Any] = field(default_factory=dict)

    @property
    def context(self) -> str:
        return "\n".join(item.verbalize() for item in self.items)


@dataclass
class Answer:
    """A final answer with the retrieval it rests on and what it cost."""

    question: str
    answers: list[str]
    text: str
    retrieval: RetrievalResult
    usage: Usage = field(default_factory=Usage)
