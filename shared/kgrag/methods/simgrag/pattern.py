"""SimGRAG pattern graphs: the small triple graphs an LLM (or code) writes for a question.

A pattern is a list of ``(head, relation, tail)`` triples. Entities or relations the question
does not name are placeholders that start with the word ``UNKNOWN`` (``"UNKNOWN director 1"``,
``"UNKNOWN relation 1"``); they match any graph item at distance 0 (the paper's Eq. 3).

Decisions the paper leaves open (notes §5):

* **Placeholder rule** -- a text is a placeholder when it starts with the upper-case word
  ``UNKNOWN`` (regex ``^UNKNOWN\\b``). The prompt asks for exactly that; matching case-sensitively
  keeps real names such as "Unknown Pleasures" from becoming wildcards.
* **Duplicates and self-loops** -- repeated triples are dropped (order kept); a triple whose head
  equals its tail is rejected, because a pattern self-loop is an LLM slip far more often than
  a real question.
* **Parallel pattern edges** (two relations between the same two pattern nodes) are allowed and
  must match two *different* graph edges.
* **Work budget** (issue 30, item 9) -- every ``UNKNOWN`` node matches any graph node and every
  ``UNKNOWN`` relation any relation at distance 0, so the matching work grows about
  exponentially with their number, and a valid reply of 12 triples over 11 ``UNKNOWN`` nodes
  and relations held the search for its whole 30 s time limit on the bundled 198-node graph.
  A pattern may hold at most :data:`MAX_UNKNOWN_NODES` (4) distinct ``UNKNOWN`` nodes and at
  most :data:`MAX_UNKNOWN_RELATIONS` (3) triples with an ``UNKNOWN`` relation; a pattern over
  either is refused up front with :class:`PatternBudgetError` (a :class:`PatternError`), whose
  message says what to change -- an LLM's reply is re-asked with it. The question types the
  method is built for need fewer (a MetaQA 3-hop question: 3 ``UNKNOWN`` nodes, 0
  ``UNKNOWN`` relations); on the 198-node graph the largest allowed chain of ``UNKNOWN``
  items completes in about a second, the refused ones ran into the time limit. Both limits
  are ``SimGRAGConfig`` fields.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from kgrag.errors import KgragError, LLMOutputError
from kgrag.llm.parsing import extract_json_object, parse_literal

#: Maximum number of triples accepted in one pattern (bounds the search depth).
MAX_PATTERN_TRIPLES = 12
#: Maximum number of distinct UNKNOWN nodes in one pattern (each matches every graph node).
MAX_UNKNOWN_NODES = 4
#: Maximum number of triples with an UNKNOWN relation in one pattern (each matches every edge).
MAX_UNKNOWN_RELATIONS = 3

_UNKNOWN = re.compile(r"^UNKNOWN\b")


class PatternError(KgragError, ValueError):
    """A pattern graph is malformed (empty, not triples, self-loop, too large, nothing known)."""


class PatternBudgetError(PatternError):
    """A pattern is valid but has more ``UNKNOWN`` items than the search may take on (see the
    module's "Work budget"); the message says which limit and how to write a narrower one."""


def is_unknown(text: str) -> bool:
    """True when ``text`` is a placeholder (``"UNKNOWN film 1"``), i.e. starts with ``UNKNOWN``."""
    return bool(_UNKNOWN.match(text.strip()))


def _clean_item(value: Any, where: str) -> str:
    if isinstance(value, bool) or not isinstance(value, (str, int, float)):
        raise PatternError(f"{where} must be a string, got {type(value).__name__}")
    text = " ".join(str(value).split())
    if not text:
        raise PatternError(f"{where} is empty")
    return text


@dataclass(frozen=True)
class Pattern:
    """A validated pattern graph.

    ``nodes`` lists the distinct node texts in order of first appearance; ``edges`` holds
    ``(head_index, tail_index)`` per triple, so the search works on small integers.

    >>> p = Pattern.from_triples([("Tokyo Godfathers", "director", "UNKNOWN director 1")])
    >>> p.nodes, p.edges, p.unknown_nodes
    (('Tokyo Godfathers', 'UNKNOWN director 1'), ((0, 1),), (False, True))
    """

    triples: tuple[tuple[str, str, str], ...]
    nodes: tuple[str, ...]
    edges: tuple[tuple[int, int], ...]

    @classmethod
    def from_triples(cls, triples: Iterable[Sequence[Any]], *,
                     max_triples: int = MAX_PATTERN_TRIPLES,
                     max_unknown_nodes: int | None = MAX_UNKNOWN_NODES,
                     max_unknown_relations: int | None = MAX_UNKNOWN_RELATIONS) -> Pattern:
        """Validate ``(head, relation, tail)`` records; raises :class:`PatternError`
        (:class:`PatternBudgetError` past the ``UNKNOWN`` limits; ``None`` lifts one)."""
        if isinstance(triples, (str, bytes)):
            raise PatternError(
                "a pattern is a list of (head, relation, tail) triples, not a string")
        seen: dict[tuple[str, str, str], None] = {}
        for position, record in enumerate(triples, start=1):
            if isinstance(record, (str, bytes)) or not isinstance(record,
                                                                  Sequence) or len(record) != 3:
                raise PatternError(f"pattern triple {position} is not (head, relation, tail): "
                                   f"{record!r:.120}")
            h = _clean_item(record[0], f"head of triple {position}")
            r = _clean_item(record[1], f"relation of triple {position}")
            t = _clean_item(record[2], f"tail of triple {position}")
            if h == t:
                raise PatternError(f"pattern triple {position} is a self-loop on {h!r}")
            seen.setdefault((h, r, t))
            if len(seen) > max_triples:
                raise PatternError(f"pattern has more than {max_triples} triples")
        if not seen:
            raise PatternError("pattern has no triples")
        nodes: dict[str, int] = {}
        edges = []
        for h, _, t in seen:
            edges.append((nodes.setdefault(h, len(nodes)), nodes.setdefault(t, len(nodes))))
        pattern = cls(tuple(seen), tuple(nodes), tuple(edges))
        pattern.check_budget(max_unknown_nodes, max_unknown_relations)
        return pattern

    def check_budget(self, max_unknown_nodes: int | None = MAX_UNKNOWN_NODES,
                     max_unknown_relations: int | None = MAX_UNKNOWN_RELATIONS) -> None:
        """Raise :class:`PatternBudgetError` when the pattern has more distinct ``UNKNOWN``
        nodes or more ``UNKNOWN`` relations than allowed (``None``: no limit)."""
        unknown_nodes = sum(self.unknown_nodes)
        unknown_relations = sum(self.unknown_relations)
        if max_unknown_nodes is not None and unknown_nodes > max_unknown_nodes:
            raise PatternBudgetError(
                f"pattern has {unknown_nodes} UNKNOWN nodes; at most {max_unknown_nodes} are "
                "searched (each one may be any entity of the graph): keep only the triples "
                "the question needs and name the entities it mentions")
        if max_unknown_relations is not None and unknown_relations > max_unknown_relations:
            raise PatternBudgetError(
                f"pattern has {unknown_relations} triples with an UNKNOWN relation; at most "
                f"{max_unknown_relations} are searched (each one may be any relation): name "
                "the relations the question states")

    @property
    def relations(self) -> tuple[str, ...]:
        return tuple(r for _, r, _ in self.triples)

    @property
    def unknown_nodes(self) -> tuple[bool, ...]:
        return tuple(is_unknown(n) for n in self.nodes)

    @property
    def unknown_relations(self) -> tuple[bool, ...]:
        return tuple(is_unknown(r) for r in self.relations)

    def components(self) -> list[list[int]]:
        """Triple indexes of each connected component (ignoring direction), in input order."""
        parent = list(range(len(self.nodes)))

        def find(x: int) -> int:
            while parent[x] != x:
                parent[x] = parent[parent[x]]
                x = parent[x]
            return x

        for u, v in self.edges:
            parent[find(u)] = find(v)
        groups: dict[int, list[int]] = {}
        for j, (u, _) in enumerate(self.edges):
            groups.setdefault(find(u), []).append(j)
        return list(groups.values())

    def subpattern(self, triple_indexes: Sequence[int]) -> Pattern:
        # a part of a pattern that passed its budget: not checked again against the defaults
        return Pattern.from_triples([self.triples[j] for j in triple_indexes],
                                    max_unknown_nodes=None, max_unknown_relations=None)

    def as_list(self) -> list[tuple[str, str, str]]:
        return list(self.triples)


def parse_pattern_reply(reply: str, *, max_triples: int = MAX_PATTERN_TRIPLES,
                        max_unknown_nodes: int | None = MAX_UNKNOWN_NODES,
                        max_unknown_relations: int | None = MAX_UNKNOWN_RELATIONS) -> Pattern:
    """Parse the query-to-pattern reply ``{"divided": [...], "triples": [(h, r, t), ...]}``.

    The first balanced ``{...}`` that parses as JSON or a Python literal (``ast.literal_eval``,
    never ``eval``) is used; prose and code fences around it are ignored. The key ``"graph"`` (the
    reference code's name) is accepted for ``"triples"``. Anything else raises
    :class:`~kgrag.errors.LLMOutputError`, so a bounded re-ask can follow -- also a valid
    pattern over the ``UNKNOWN`` budget (the re-ask quotes the limit).

    >>> reply = 'Here: {"divided": ["a"], "triples": [("A", "r", "UNKNOWN x 1"),]}'
    >>> parse_pattern_reply(reply).triples
    (('A', 'r', 'UNKNOWN x 1'),)
    """
    obj = extract_json_object(reply or "", kind=dict)
    key = next((k for k in ("triples", "graph") if k in obj), None)
    if key is None:
        raise LLMOutputError(f"pattern reply has no 'triples' (or 'graph') key: {str(obj)[:160]!r}")
    value = obj[key]
    if not isinstance(value, (list, tuple)):
        raise LLMOutputError(f"'{key}' must be a list of triples, got {type(value).__name__}")
    try:
        return Pattern.from_triples(value, max_triples=max_triples,
                                    max_unknown_nodes=max_unknown_nodes,
                                    max_unknown_relations=max_unknown_relations)
    except PatternError as exc:
        raise LLMOutputError(f"invalid pattern in reply: {exc}") from exc


def pattern_from_text(text: str) -> Pattern:
    """A pattern a user wrote as text: a list of ``(head, relation, tail)`` triples as a JSON or
    Python literal (parsed, never evaluated), e.g. ``kgrag simgrag --pattern`` and ``kgrag ask
    --pattern``. Raises :class:`PatternError` (also for text that is no literal at all).

    >>> pattern_from_text('[("Paprika", "directed_by", "UNKNOWN person 1")]').triples
    (('Paprika', 'directed_by', 'UNKNOWN person 1'),)
    """
    try:
        triples = parse_literal(text)
    except LLMOutputError as exc:
        raise PatternError(f"the pattern is not a list of triples: {exc}") from None
    if not isinstance(triples, (list, tuple)):
        raise PatternError(f"the pattern is not a list of triples: {text[:120]!r}")
    return Pattern.from_triples(triples)
