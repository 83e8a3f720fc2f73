"""kgrag.text: offline tokenizer, (sub-)chunking, sentences, keywords (KET-RAG steps 0-1)."""

from __future__ import annotations

import pytest

from kgrag.text import (
    ENGLISH_STOPWORDS,
    chunk_and_split,
    chunk_text,
    count_tokens,
    default_tokenizer,
    keywords,
    split_sentences,
    sub_chunk_size,
)


def test_default_tokenizer_is_the_packaged_wordpiece_and_offline():
    tok = default_tokenizer()
    assert tok.name == "all-MiniLM-L6-v2-wordpiece"
    assert count_tokens("apple apple apple") == 3
    spans = tok.token_spans("Clio Goldsmith")
    text = "Clio Goldsmith"
    # offsets point into the original string (case preserved), word pieces included
    assert [text[s:e] for s, e in spans] == ["Cl", "io", "Goldsmith"]


def test_1200_token_chunk_splits_into_eight_150_token_sub_chunks():
    text = " ".join(["apple"] * 1200)
    [(chunk, subs)] = chunk_and_split(text, size=1200, splits=3)
    assert chunk.n_tokens == 1200 and chunk.text == text
    assert [s.n_tokens for s in subs] == [150] * 8
    assert "".join(s.text for s in subs) == text
    assert all(count_tokens(s.text) == 150 for s in subs)


def test_zero_splits_is_the_identity():
    text = " ".join(["pear"] * 300)
    for chunk, subs in chunk_and_split(text, size=120, splits=0):
        assert subs == [chunk]


def test_remainder_goes_to_the_last_piece_and_documents_round_trip():
    text = " ".join(["apple"] * 1000)
    [(chunk, subs)] = chunk_and_split(text, size=1200, splits=3)
    assert [s.n_tokens for s in subs] == [150] * 6 + [100]
    pieces = chunk_text(" ".join(["apple"] * 2500), size=1200)
    assert [p.n_tokens for p in pieces] == [1200, 1200, 100]
    assert "".join(p.text for p in pieces) == " ".join(["apple"] * 2500)
    assert sub_chunk_size(1200, 3) == 150 and sub_chunk_size(150, 0) == 150


def test_boundaries_never_cut_a_word_in_two():
    # "Clio" is two word pieces; a window boundary between them moves back to the word start
    text = "aa bb Clio dd"
    pieces = chunk_text(text, size=3)  # tokens: aa bb Cl ##io dd
    assert [p.text for p in pieces] == ["aa bb ", "Clio dd"]


def test_sub_chunk_ids_are_stable():
    text = "The Eiffel Tower is in Paris. " * 80
    a = [(c.start, c.end, [(s.start, s.end) for s in subs]) for c,
         subs in chunk_and_split(text, 200, 2)]
    b = [(c.start, c.end, [(s.start, s.end) for s in subs]) for c,
         subs in chunk_and_split(text, 200, 2)]
    assert a == b


def test_overlap_and_bad_sizes():
    pieces = chunk_text(" ".join(str(i) for i in range(10)), size=4, overlap=2, tokenizer="regex")
    assert [p.text for p in pieces] == ["0 1 2 3", "2 3 4 5", "4 5 6 7", "6 7 8 9"]
    with pytest.raises(ValueError):
        chunk_text("a b c", size=0)
    with pytest.raises(ValueError):
        chunk_text("a b c", size=2, overlap=2)
    assert chunk_text("   ") == []


def test_sentences_respect_abbreviations_and_initials():
    text = "Dr. Smith moved to the U.S. in 1990. J. R. R. Tolkien wrote it! Did he?\nNew line"
    assert split_sentences(text) == ["Dr. Smith moved to the U.S. in 1990.",
                                     "J. R. R. Tolkien wrote it!", "Did he?", "New line"]


def test_keywords_drop_stopwords_and_punctuation_and_lowercase():
    assert keywords("The Eiffel Tower is in Paris, and PARIS is in France's north!") == [
        "eiffel", "tower", "paris", "france", "north"]
    assert keywords("It was 1957; a 2-3 win.") == ["1957", "win"]
    assert {"the", "is", "and", "s"} <= ENGLISH_STOPWORDS
    assert keywords("the and of") == []
