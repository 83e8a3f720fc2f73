"""The text-keyword bipartite graph G_K (KET-Index, Algorithm 3 lines 10-15), built without an LLM.

Sub-chunks are split into sentences; each sentence's keywords come from
:func:`kgrag.text.keywords`. With ``S`` the binary sentence x keyword matrix and ``E`` the
sentence embeddings:

* keyword vector = L2-normalised ``mean`` of the embeddings of the *distinct sentences* that
  contain the keyword (``S.T @ E / count``). The paper averages "these sentences' embeddings";
  the reference code counts a sentence once per occurrence and does not renormalise. We count
  each sentence once and renormalise, so cosine = inner product at query time;
* keyword-sub-chunk edges = ``owner.T @ S > 0`` (a set: a word repeated in a sub-chunk gives
  one edge), stored as a CSR list of sub-chunk ids per keyword.

The keyword's "description" (its sentences concatenated) is not stored; :func:`keyword_sentences`
rebuilds it on demand. Identical sentence texts are embedded once.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

from kgrag.text.keywords import keywords as extract_keywords
from kgrag.text.sentences import sentence_spans


@dataclass
class SentenceTable:
    """Sentences of all sub-chunks: text, owning sub-chunk, keyword incidence (CSR rows)."""

    texts: list[str]
    owner: np.ndarray  # sub-chunk id per sentence
    incidence: sp.csr_matrix  # sentences x keywords, 0/1
    vocabulary: list[str]


@dataclass
class KeywordGraph:
    """Keywords, their unit vectors, and the sub-chunks each keyword occurs in."""

    vocabulary: list[str]
    vectors: np.ndarray  # (n_keywords, d) float32, unit rows (zero for a keyword without vector)
    indptr: np.ndarray  # keyword k's sub-chunks: indices[indptr[k]:indptr[k+1]] (ascending)
    indices: np.ndarray
    sentence_counts: np.ndarray  # distinct sentences per keyword

    @property
    def num_keywords(self) -> int:
        return len(self.vocabulary)

    def sub_chunks_of(self, keyword_id: int) -> np.ndarray:
        return self.indices[self.indptr[keyword_id]:self.indptr[keyword_id + 1]]

    def degree(self, keyword: str) -> int:
        k = self.vocabulary.index(keyword)
        return int(self.indptr[k + 1] - self.indptr[k])

    def sub_chunk_keyword_matrix(self, n_sub_chunks: int) -> sp.csr_matrix:
        """Sub-chunks x keywords 0/1 matrix (the transpose of the stored adjacency)."""
        m = sp.csr_matrix((np.ones(len(self.indices), dtype=np.float32), self.indices,
                           self.indptr), shape=(self.num_keywords, n_sub_chunks))
        return m.T.tocsr()


def build_sentence_table(sub_chunk_texts: Sequence[str], *, min_keyword_length: int = 2
                         ) -> SentenceTable:
    """Split sub-chunks into sentences and index their keywords (vocabulary in first-seen order)."""
    texts: list[str] = []
    owner: list[int] = []
    vocab: dict[str, int] = {}
    rows: list[int] = []
    cols: list[int] = []
    for sid, text in enumerate(sub_chunk_texts):
        for start, end in sentence_spans(text):
            sentence = text[start:end]
            kws = extract_keywords(sentence, min_length=min_keyword_length)
            if not kws:
                continue
            row = len(texts)
            texts.append(sentence)
            owner.append(sid)
            for kw in kws:
                rows.append(row)
                cols.append(vocab.setdefault(kw, len(vocab)))
    incidence = sp.csr_matrix((np.ones(len(rows), dtype=np.float32), (rows, cols)),
                              shape=(len(texts), len(vocab)))
    return SentenceTable(texts, np.asarray(owner, dtype=np.int64), incidence, list(vocab))


def build_keyword_graph(table: SentenceTable, n_sub_chunks: int,
                        embed_sentences: Callable[[list[str]], np.ndarray]) -> KeywordGraph:
    """Keyword vectors (mean of their sentences' embeddings) and keyword -> sub-chunk edges."""
    n_sent, n_kw = table.incidence.shape
    unique: dict[str, int] = {}
    sentence_row = np.array([unique.setdefault(t, len(unique)) for t in table.texts], np.int64)
    if unique:
        unique_vectors = np.asarray(embed_sentences(list(unique)), dtype=np.float32)
        sentence_vectors = unique_vectors[sentence_row]
        dim = unique_vectors.shape[1]
    else:
        sentence_vectors = np.zeros((0, 1), np.float32)
        dim = 1
    st = table.incidence.T.tocsr()  # keywords x sentences
    counts = np.asarray(st.sum(axis=1)).ravel()
    sums = np.asarray(st @ sentence_vectors, dtype=np.float64) if n_sent else np.zeros((n_kw, dim))
    means = sums / np.maximum(counts, 1)[:, None]
    norms = np.linalg.norm(means, axis=1, keepdims=True)
    vectors = (means / np.where(norms == 0, 1, norms)).astype(np.float32)
    owner = sp.csr_matrix((np.ones(n_sent, dtype=np.float32), (table.owner, np.arange(n_sent))),
                          shape=(n_sub_chunks, n_sent))
    kw_sub = (owner @ table.incidence).T.tocsr()  # keywords x sub-chunks, counts
    kw_sub.data[:] = 1
    kw_sub.sort_indices()
    return KeywordGraph(table.vocabulary, vectors, kw_sub.indptr.astype(np.int64),
                        kw_sub.indices.astype(np.int64), counts.astype(np.int64))


def keyword_sentences(table: SentenceTable, keyword: str) -> list[str]:
    """The keyword's description: the sentences containing it, in corpus order."""
    k = table.vocabulary.index(keyword)
    col = table.incidence.tocsc()[:, k]
    return [table.texts[i] for i in sorted(col.indices.tolist())]
