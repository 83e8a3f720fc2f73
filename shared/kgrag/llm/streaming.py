"""What a streamed answer shows: the reply's text without its markup tags.

The answer prompts ask for tagged replies (``<answers>\\nBob\\n</answers>``) so they can be
parsed; a user streaming the answer wants the text, as ``invoke`` returns it, not the tags.
:class:`TagStripper` filters the pieces of a streamed reply as they arrive: it drops tags
(``<answers>``, ``</answer>``, ``<br/>``), even when one is split over several pieces, keeps
every other ``<`` (``x < y``, ``<3``), and drops the whitespace before the first and after the
last word. Both adapters' streams (LangChain ``stream`` / ``astream`` of the answer chain,
LlamaIndex ``streaming=True`` query engines) pass their pieces through it.

>>> s = TagStripper()
>>> "".join([s.feed("<answ"), s.feed("ers>\\nBob"), s.feed("\\nAlice\\n</answers>"), s.flush()])
'Bob\\nAlice'
"""

from __future__ import annotations

import re

#: a whole markup tag: ``<name>``, ``</name>``, ``<name/>`` (no attributes: the answer tags have
#: none, and ``a < b > c`` must stay text)
_TAG = re.compile(r"</?[A-Za-z_][\w-]*\s*/?>")
#: what the start of a tag can look like before its ``>`` arrives
_TAG_START = re.compile(r"</?(?:[A-Za-z_][\w-]*\s*/?)?")
#: a ``<`` that has not closed after this many characters is text
_MAX_TAG = 64


class TagStripper:
    """Incremental filter of a streamed reply: :meth:`feed` each piece, then :meth:`flush`."""

    def __init__(self) -> None:
        self._pending = ""    # a possible tag, waiting for its ">"
        self._space = ""      # whitespace, emitted only when more text follows
        self._started = False

    def _emit(self, text: str) -> str:
        out = []
        for chunk in re.split(r"(\s+)", text):
            if not chunk:
                continue
            if chunk.isspace():
                if self._started:
                    self._space += chunk
                continue
            out.append(self._space + chunk)
            self._space, self._started = "", True
        return "".join(out)

    def feed(self, piece: str) -> str:
        """The text of ``piece`` that can be shown now (possibly ``""``)."""
        text, self._pending = self._pending + (piece or ""), ""
        kept: list[str] = []
        i = 0
        while i < len(text):
            j = text.find("<", i)
            if j < 0:
                kept.append(text[i:])
                break
            kept.append(text[i:j])
            k = text.find(">", j)
            if k < 0:
                rest = text[j:]
                if len(rest) < _MAX_TAG and _TAG_START.fullmatch(rest):
                    self._pending = rest
                    break
                kept.append("<")
                i = j + 1
                continue
            if _TAG.fullmatch(text[j:k + 1]):
                i = k + 1
                continue
            kept.append("<")
            i = j + 1
        return self._emit("".join(kept))

    def flush(self) -> str:
        """The text still held back (an unfinished ``<...``) at the end of the reply; the
        trailing whitespace is dropped."""
        text, self._pending = self._pending, ""
        out = self._emit(text)
        self._space = ""
        return out
