"""Mention extraction without an LLM: which n-grams of a question name graph nodes.

Used by the LLM-free modes. Steps:

1. Spans in square brackets (MetaQA marks topic entities as ``[Satoshi Kon]``) are mentions.
2. Word n-grams (up to ``max_ngram`` words) whose :func:`~kgrag.linking.fuzzy.name_key` is the
   key of a name or alias: one dict lookup per n-gram, so a 43k-name graph costs microseconds.
3. Remaining n-grams are matched fuzzily (rapidfuzz via the linker's fuzzy index) and kept when
   the score reaches ``fuzzy_threshold`` -- this catches small misspellings ("Tokio Godfathers").

Overlaps are resolved longest-match-first (then by score, then leftmost): a chosen span blocks
every n-gram that overlaps it. N-grams made only of stopwords (or shorter than ``min_chars``)
are never mentions, so "the" or "who" do not link to a film called "Who".
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from kgrag.graph.base import GraphStore
from kgrag.linking.linker import EntityLinker, Link

_WORD = re.compile(r"[^\W_]+")
_BRACKET = re.compile(r"\[([^\[\]]+)\]")

#: Question words and function words that never form a mention on their own.
STOPWORDS = frozenset("""
a an the of in on at to for from by with about as into onto over under than then and or nor
but not no is are was were be been being am do does did done has have had having can could will
would shall should may might must what which who whom whose when where why how that this these
those it its it's i me my we us our you your he him his she her they them their there here
movie movies film films book books person people direct directed director write wrote written
act acted actor actors star starred starring same also other share shared release released
year years type types genre genres language languages tag tags one ones some any all
""".split())


@dataclass(frozen=True)
class Mention:
    """A span of the question (``start``/``end`` character offsets) and its links, best first."""

    text: str
    start: int
    end: int
    links: tuple[Link, ...]

    @property
    def name(self) -> str:
        return self.links[0].name

    @property
    def score(self) -> float:
        return self.links[0].score

    @property
    def source(self) -> str:
        return self.links[0].source


def _as_linker(linker_or_names: Any) -> EntityLinker:
    if isinstance(linker_or_names, EntityLinker):
        return linker_or_names
    if isinstance(linker_or_names, GraphStore):
        return EntityLinker.from_graph(linker_or_names, mode="fuzzy")
    if isinstance(linker_or_names, str):
        raise TypeError("pass a linker, a graph or a list of names, not one string")
    return EntityLinker(linker_or_names, mode="fuzzy")


def extract_mentions(
    question: str,
    linker_or_names: EntityLinker | Iterable[str] | Any,
    *,
    max_ngram: int = 6,
    fuzzy: bool = True,
    fuzzy_threshold: float = 0.9,
    min_chars: int = 2,
    use_brackets: bool = True,
    top_m: int = 1,
    stopwords: frozenset[str] = STOPWORDS,
) -> list[Mention]:
    """Mentions of graph names in ``question``, in question order.

    ``linker_or_names`` is an :class:`EntityLinker` (reuse one for many questions), a graph, or
    a list of names. ``top_m`` links per fuzzy mention (exact hits return every name with that
    key). See the module docstring for the matching rules.

    >>> [m.name for m in extract_mentions("Who directed Tokyo Godfathers?",
    ...                                   ["Tokyo Godfathers", "Satoshi Kon", "Tokyo"])]
    ['Tokyo Godfathers']
    """
    linker = _as_linker(linker_or_names)
    chosen: list[Mention] = []
    taken = [False] * len(question)

    def free(start: int, end: int) -> bool:
        return not any(taken[start:end])

    def take(mention: Mention) -> None:
        chosen.append(mention)
        for i in range(mention.start, mention.end):
            taken[i] = True

    if use_brackets:
        for match in _BRACKET.finditer(question):
            text = match.group(1).strip()
            links = linker.exact(text) or linker.link(text, top_m=top_m)
            if links:
                take(Mention(text, match.start(1), match.end(1), tuple(links)))

    words = [(m.start(), m.end(), m.group().casefold()) for m in _WORD.finditer(question)]
    spans: list[tuple[int, int, int, str]] = []  # (n words, start word, end word, key)
    for n in range(min(max_ngram, len(words)), 0, -1):
        for i in range(len(words) - n + 1):
            toks = [w[2] for w in words[i:i + n]]
            if all(t in stopwords for t in toks):
                continue
            key = " ".join(toks)
            if len(key) < min_chars:
                continue
            spans.append((n, i, i + n, key))

    # Exact and alias hits, longest first (spans are generated longest first, leftmost first).
    for _n, i, j, _key in spans:
        start, end = words[i][0], words[j - 1][1]
        if not free(start, end):
            continue
        links = linker.exact(question[start:end])
        if links:
            take(Mention(question[start:end], start, end, tuple(links)))

    if fuzzy:
        candidates: list[tuple[int, float, int, Mention]] = []
        for n, i, j, key in spans:
            start, end = words[i][0], words[j - 1][1]
            if not free(start, end) or len(key) < max(min_chars, 4):
                continue
            links = [link for link in linker.fuzzy(question[start:end], top_m)
                     if link.score >= fuzzy_threshold]
            if links:
                candidates.append((n, links[0].score, start,
                                   Mention(question[start:end], start, end, tuple(links))))
        candidates.sort(key=lambda c: (-c[0], -c[1], c[2]))
        for _, _, _, mention in candidates:
            if free(mention.start, mention.end):
                take(mention)

    return sorted(chosen, key=lambda m: m.start)
