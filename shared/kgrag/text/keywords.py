"""Keyword extraction without an LLM (KET-RAG's vocabulary of keyword nodes).

A keyword is a lower-cased word of letters and digits (Unicode-aware) that is at least two
characters long and not in :data:`~kgrag.text.stopwords.ENGLISH_STOPWORDS`. Lower-casing is our
choice (the reference code is case-sensitive): it makes "Paris" at the start of a sentence and in
the middle one node. Numbers are kept (years and counts are frequent answers). Possessive "'s"
and hyphens split words ("France's" -> "france"; "well-known" -> "well", "known").
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from kgrag.text.stopwords import ENGLISH_STOPWORDS

_WORD = re.compile(r"[^\W_]+", re.UNICODE)


def words(text: str) -> list[str]:
    """All lower-cased words of ``text`` in order (stopwords included)."""
    return [w.lower() for w in _WORD.findall(text)]


def keywords(text: str, *, stopwords: Iterable[str] | None = None,
             min_length: int = 2) -> list[str]:
    """Keywords of ``text`` in order of first occurrence, each once.

    >>> keywords("The Eiffel Tower is in Paris; Paris is in France.")
    ['eiffel', 'tower', 'paris', 'france']
    """
    stop = ENGLISH_STOPWORDS if stopwords is None else frozenset(stopwords)
    seen: dict[str, None] = {}
    for w in words(text):
        if len(w) >= min_length and w not in stop and w not in seen:
            seen[w] = None
    return list(seen)
