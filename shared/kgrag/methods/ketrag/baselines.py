"""The paper's in-framework baselines over the KET-RAG index (Section 6.1): Text-RAG and KNNG-RAG.

* **Text-RAG**: the units most cosine-similar to the query (the seed nodes of the KNN graph),
  as ``id|text`` lines until the budget. ``unit="chunk"`` ranks the l-token chunks (the paper's
  Text-RAG), ``unit="sub_chunk"`` the sub-chunks (its high-accuracy setting, l = 150).
* **KNNG-RAG**: the same seed chunks, each followed by its KNN-graph neighbours (in id order),
  without repeats, until the budget.

They share the index's vectors, tokenizer and line format with KET-RAG, so a comparison at the
same ``L`` differs only in what is retrieved. Lines whose token count was computed once are
memoised on the index object.
"""

from __future__ import annotations

import numpy as np

from kgrag.embed.similarity import matvec
from kgrag.methods.ketrag.index import KETIndex
from kgrag.text.tokens import TextTokenizer

TEXT_HEADER = "-----Text sources-----\nid|text"


def _line(index: KETIndex, unit: str, i: int) -> str:
    texts = index.chunk_texts if unit == "chunk" else index.sub_texts
    prefix = "c" if unit == "chunk" else "s"
    return f"{prefix}{i}|{' '.join(texts[i].split())}"


def _line_tokens(index: KETIndex, unit: str, i: int, tokenizer: TextTokenizer) -> int:
    memo = index.__dict__.setdefault("_baseline_line_tokens", {}).setdefault(
        (unit, tokenizer.name), {})
    if i not in memo:
        memo[i] = tokenizer.count(_line(index, unit, i))
    return memo[i]


def _fill(index: KETIndex, unit: str, order: list[int], budget: int,
          tokenizer: TextTokenizer) -> tuple[str, list[int]]:
    used = tokenizer.count(TEXT_HEADER)
    lines, taken = [TEXT_HEADER], []
    for i in order:
        n = _line_tokens(index, unit, i, tokenizer)
        if used + n > budget:
            break
        lines.append(_line(index, unit, i))
        taken.append(i)
        used += n
    return ("\n".join(lines) if taken else ""), taken


def text_rag(index: KETIndex, query: np.ndarray, budget: int, tokenizer: TextTokenizer,
             unit: str = "chunk") -> tuple[str, list[int]]:
    """``(context, unit ids)`` of plain dense retrieval within ``budget`` tokens."""
    if unit not in ("chunk", "sub_chunk"):
        raise ValueError("unit must be 'chunk' or 'sub_chunk'")
    vectors = index.chunk_vectors if unit == "chunk" else index.sub_vectors
    scores = matvec(vectors, query)
    order = np.lexsort((np.arange(len(scores)), -scores)).tolist()
    return _fill(index, unit, order, budget, tokenizer)


def knng_rag(index: KETIndex, query: np.ndarray, budget: int, tokenizer: TextTokenizer
             ) -> tuple[str, list[int]]:
    """``(context, chunk ids)``: each seed chunk followed by its KNN-graph neighbours."""
    n = index.num_chunks
    neighbours: list[list[int]] = [[] for _ in range(n)]
    for u, v in index.knn_edges.tolist():
        neighbours[u].append(v)
        neighbours[v].append(u)
    scores = matvec(index.chunk_vectors, query)
    order: list[int] = []
    seen: set[int] = set()
    for seed in np.lexsort((np.arange(n), -scores)).tolist():
        for c in [seed, *sorted(neighbours[seed])]:
            if c not in seen:
                seen.add(c)
                order.append(c)
        if len(order) >= n:
            break
    return _fill(index, "chunk", order, budget, tokenizer)
