"""Names of graph elements: their canonical form (:func:`normalize_name`) and the words an
embedding model understands (:func:`relation_words`).

Relation names in real KGs are identifiers (``directed_by``, ``placeOfBirth``,
``film.film.directed_by``, ``P57``). Sentence embedders score the words far better than the
identifier: with all-MiniLM-L6-v2, "Who directed ?" is closer to ``starred_actors`` (0.55) than to
``directed_by`` (0.51), but closer to "directed by" (0.67) than to "starred actors" (0.64).
Every method that embeds relation names goes through :func:`relation_words`.
"""

from __future__ import annotations

import re
import unicodedata
from typing import Any


def normalize_name(name: Any) -> str:
    """Canonical form of a node or relation name: ``str``, NFC-normalised, outer space stripped.

    NFC makes a composed "é" and "e" + combining accent the same node; nothing else (case,
    inner whitespace) is changed, because names in real KGs differ by exactly those. Every
    store and index normalises with this one function (it lives here, below ``graph`` and
    ``embed``, so both can use it).
    """
    return unicodedata.normalize("NFC", str(name)).strip()


_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")
_SEPARATORS = re.compile(r"[_./:#\-]+")


def relation_words(name: str) -> str:
    """``directed_by`` / ``placeOfBirth`` / ``film.director`` -> "directed by" / "place of birth" /
    "film director".

    Lower-cased words; a name with no word characters is returned unchanged.

    >>> relation_words("film.film.directed_by")
    'film film directed by'
    >>> relation_words("placeOfBirth")
    'place of birth'
    """
    text = _SEPARATORS.sub(" ", _CAMEL.sub(" ", name))
    return " ".join(text.split()).lower() or name
