"""Make arbitrary Python strings safe for encoders: lone surrogates become U+FFFD.

A Python ``str`` may hold lone surrogate code points (``"\\ud800"``), for example from
``json.loads('"\\\\ud800"')``, ``os.fsdecode`` of a bad file name or a model reply decoded with
``surrogateescape``. They are not valid Unicode: the Rust ``tokenizers`` library (used by the
embedding model and the KET-RAG token counter) raises ``TypeError``, and ``str.encode("utf-8")``
raises ``UnicodeEncodeError``. Questions, LLM replies and indexed text pass through
:func:`replace_lone_surrogates` before they reach an encoder. The replacement keeps the length,
so character offsets computed on the clean text are valid for the original.
"""

from __future__ import annotations

import re

_SURROGATE = re.compile("[\ud800-\udfff]")

#: What a lone surrogate becomes (the Unicode replacement character).
REPLACEMENT = "\ufffd"


def has_lone_surrogates(text: str) -> bool:
    """``True`` when ``text`` holds a surrogate code point (cannot be encoded as UTF-8)."""
    if text.isascii():
        return False
    return _SURROGATE.search(text) is not None


def replace_lone_surrogates(text: str) -> str:
    """``text`` with every surrogate code point replaced by U+FFFD (same length).

    >>> replace_lone_surrogates("Paprika\\ud800?")
    'Paprika\\ufffd?'
    """
    if not has_lone_surrogates(text):
        return text
    return _SURROGATE.sub(REPLACEMENT, text)
