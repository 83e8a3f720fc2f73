"""A small rule-based sentence splitter (offline replacement for NLTK's ``sent_tokenize``).

It splits after ``.``, ``!`` or ``?`` (plus closing quotes/brackets) when whitespace and an
upper-case letter, digit or opening quote follow, and at blank lines / line breaks. It does not
split after common abbreviations ("Dr.", "St.", "U.S.", "e.g.") or after a single initial
("J. R. R. Tolkien"). Precision matters little for KET-RAG: a sentence only groups keywords for the
keyword embedding.
"""

from __future__ import annotations

import re

_ABBREVIATIONS = frozenset("""
mr mrs ms dr prof sr jr st mt ft vs etc inc ltd co corp gen col lt sgt capt gov sen rep rev
no nos vol vols fig figs approx dept est jan feb mar apr jun jul aug sep sept oct nov dec
e.g i.e u.s u.k u.n a.m p.m b.c a.d ph.d cf al
""".split())

_BOUNDARY = re.compile(r"""([.!?]+["')\]»”’]*)(\s+)(?=["'(\[«“‘]?[A-Z0-9À-Ý])""")
_LINE_BREAK = re.compile(r"\n+")


def _ends_with_abbreviation(text: str) -> bool:
    word = re.search(r"(\S+)$", text)
    if not word:
        return False
    token = word.group(1).rstrip(".").lower().lstrip("(\"'")
    return token in _ABBREVIATIONS or (len(token) == 1 and token.isalpha())


def sentence_spans(text: str) -> list[tuple[int, int]]:
    """``[start, end)`` character spans of the sentences of ``text`` (whitespace trimmed)."""
    spans: list[tuple[int, int]] = []
    for block in _split_keep(text, _LINE_BREAK):
        b0, b1 = block
        start = b0
        for m in _BOUNDARY.finditer(text, b0, b1):
            cut = m.end(1)
            if _ends_with_abbreviation(text[start:m.start(1)]):
                continue
            spans.append((start, cut))
            start = m.end(2)
        spans.append((start, b1))
    out = []
    for s, e in spans:
        while s < e and text[s].isspace():
            s += 1
        while e > s and text[e - 1].isspace():
            e -= 1
        if e > s:
            out.append((s, e))
    return out


def _split_keep(text: str, pattern: re.Pattern[str]) -> list[tuple[int, int]]:
    pieces, start = [], 0
    for m in pattern.finditer(text):
        pieces.append((start, m.start()))
        start = m.end()
    pieces.append((start, len(text)))
    return pieces


def split_sentences(text: str) -> list[str]:
    """The sentences of ``text``.

    >>> split_sentences("Dr. Smith lives in Paris. It is in France!")
    ['Dr. Smith lives in Paris.', 'It is in France!']
    """
    return [text[s:e] for s, e in sentence_spans(text)]
