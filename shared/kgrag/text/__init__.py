"""Text utilities: offline token counting, chunking, sentence splitting, keywords, stopwords."""

from kgrag.text.chunking import TextPiece, chunk_and_split, chunk_text, split_chunk, sub_chunk_size
from kgrag.text.keywords import keywords, words
from kgrag.text.sentences import sentence_spans, split_sentences
from kgrag.text.stopwords import ENGLISH_STOPWORDS
from kgrag.text.tokens import (
    RegexTokenizer,
    TextTokenizer,
    WordPieceTokenizer,
    count_tokens,
    count_tokens_many,
    default_tokenizer,
    get_tokenizer,
)

__all__ = [
    "ENGLISH_STOPWORDS",
    "RegexTokenizer",
    "TextPiece",
    "TextTokenizer",
    "WordPieceTokenizer",
    "chunk_and_split",
    "chunk_text",
    "count_tokens",
    "count_tokens_many",
    "default_tokenizer",
    "get_tokenizer",
    "keywords",
    "sentence_spans",
    "split_chunk",
    "split_sentences",
    "sub_chunk_size",
    "words",
]
