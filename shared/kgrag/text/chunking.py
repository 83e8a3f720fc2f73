"""Token-window chunking with exact character spans (KET-RAG step 0 and its sub-chunk split).

A document is cut into chunks of ``size`` tokens (optionally overlapping); each chunk is cut into
sub-chunks of ``ceil(size / 2**m)`` tokens. For a full chunk this is the paper's "halve ``m``
times" (1200 -> 8 x 150); a shorter final chunk keeps the same sub-chunk length and puts the
remainder in its last piece (as the reference code's fixed windows do), so every sub-chunk in the
index has about the same size.

Boundaries are moved back, by at most a few tokens, to the start of a word, so a WordPiece
boundary never cuts "Cl|io" in two. Without overlap, chunk texts concatenate back to the document
exactly, and sub-chunk texts concatenate back to their chunk exactly (whitespace between two
pieces stays with the earlier one).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from kgrag.text.tokens import TextTokenizer, get_tokenizer

#: How far (in tokens) a boundary may move back to land on a word start.
MAX_SNAP_TOKENS = 16


@dataclass(frozen=True)
class TextPiece:
    """A piece of a text: ``text == source[start:end]``, ``first_token:last_token`` its tokens."""

    text: str
    start: int
    end: int
    first_token: int
    last_token: int  # exclusive

    @property
    def n_tokens(self) -> int:
        return self.last_token - self.first_token


def _is_word_start(text: str, spans: np.ndarray, i: int) -> bool:
    start = int(spans[i, 0])
    if start == 0:
        return True
    return not (text[start - 1].isalnum() and text[start].isalnum())


def _window_bounds(text: str, spans: np.ndarray, lo: int, hi: int, size: int,
                   overlap: int = 0) -> list[tuple[int, int]]:
    """Token index ranges ``[a, b)`` covering ``[lo, hi)`` in windows of about ``size``."""
    if size <= 0:
        raise ValueError("chunk size must be a positive number of tokens")
    if not 0 <= overlap < size:
        raise ValueError("overlap must be >= 0 and smaller than the chunk size")
    bounds: list[tuple[int, int]] = []
    a = lo
    while a < hi:
        b = min(a + size, hi)
        if b < hi:
            for cand in range(b, max(a + 1, b - MAX_SNAP_TOKENS) - 1, -1):
                if _is_word_start(text, spans, cand):
                    b = cand
                    break
        bounds.append((a, b))
        if b >= hi:
            break
        nxt = b - overlap
        if overlap:
            while nxt > a + 1 and not _is_word_start(text, spans, nxt):
                nxt -= 1
        a = max(nxt, a + 1)
    return bounds


def _pieces(text: str, spans: np.ndarray, bounds: list[tuple[int, int]], start: int,
            end: int) -> list[TextPiece]:
    n = len(bounds)
    out = []
    for i, (a, b) in enumerate(bounds):
        c0 = start if i == 0 else int(spans[a, 0])
        if i + 1 < n and bounds[i + 1][0] >= b:  # no overlap: run up to the next piece
            c1 = int(spans[bounds[i + 1][0], 0])
        elif i + 1 < n:  # overlapping windows: end at this window's last token
            c1 = int(spans[b - 1, 1])
        else:
            c1 = end
        out.append(TextPiece(text[c0:c1], c0, c1, a, b))
    return out


def chunk_text(text: str, size: int = 1200, overlap: int = 0,
               tokenizer: TextTokenizer | str | None = None) -> list[TextPiece]:
    """Cut ``text`` into windows of ``size`` tokens (``overlap`` tokens shared by neighbours).

    Whitespace-only text gives no chunk.

    >>> pieces = chunk_text("one two three four five", size=2, tokenizer="regex")
    >>> [p.text for p in pieces]
    ['one two ', 'three four ', 'five']
    """
    if not text.strip():
        return []
    spans = get_tokenizer(tokenizer).token_spans(text)
    if len(spans) == 0:
        return []
    bounds = _window_bounds(text, spans, 0, len(spans), size, overlap)
    return _pieces(text, spans, bounds, 0, len(text))


def sub_chunk_size(chunk_size: int, splits: int) -> int:
    """Tokens per sub-chunk after halving a ``chunk_size`` chunk ``splits`` times."""
    if splits < 0:
        raise ValueError("the number of splits m must be >= 0")
    return max(1, math.ceil(chunk_size / 2**splits))


def split_chunk(text: str, chunk: TextPiece, chunk_size: int, splits: int,
                spans: np.ndarray) -> list[TextPiece]:
    """Sub-chunks of ``chunk`` (a piece of ``text`` whose token spans are ``spans``).

    ``splits == 0`` returns the chunk itself; otherwise windows of
    :func:`sub_chunk_size` tokens whose texts concatenate to the chunk's text.
    """
    if splits == 0:
        return [chunk]
    bounds = _window_bounds(text, spans, chunk.first_token, chunk.last_token,
                            sub_chunk_size(chunk_size, splits))
    return _pieces(text, spans, bounds, chunk.start, chunk.end)


def chunk_and_split(text: str, size: int = 1200, splits: int = 3, overlap: int = 0,
                    tokenizer: TextTokenizer | str | None = None
                    ) -> list[tuple[TextPiece, list[TextPiece]]]:
    """Chunks of ``text`` with their sub-chunks, tokenizing ``text`` once."""
    if not text.strip():
        return []
    spans = get_tokenizer(tokenizer).token_spans(text)
    if len(spans) == 0:
        return []
    chunks = _pieces(text, spans, _window_bounds(text, spans, 0, len(spans), size, overlap),
                     0, len(text))
    return [(c, split_chunk(text, c, size, splits, spans)) for c in chunks]
