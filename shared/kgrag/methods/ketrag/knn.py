"""The chunk KNN graph, PageRank and key-chunk selection (KET-Index, Algorithm 3 lines 2-8).

* Lexical neighbours: the ``k`` chunks sharing the most distinct keywords with a chunk, from the
  sparse product ``X @ X.T`` of the binary chunk-keyword matrix (computed in row blocks), never a
  pairwise Python loop. Chunks sharing no keyword are not neighbours.
* Semantic neighbours: the ``k`` chunks with the highest cosine similarity (blocked dense matmul of
  L2-normalised vectors).
* Ties go to the lower chunk id, so the graph is deterministic. Self-loops are excluded.
* The KNN graph is the undirected, unweighted union of both edge sets.
* PageRank with damping ``alpha`` (0.85) and uniform teleport; the mass of isolated nodes is
  spread uniformly (networkx's convention), so the scores sum to 1 and match ``nx.pagerank``.
* The key chunks are the ``floor(beta * n)`` best by PageRank (ties: lower id first), or a seeded
  uniform sample for the paper's KET-RAG-U variant.
"""

from __future__ import annotations

import math

import numpy as np
import scipy.sparse as sp

#: Rows per block in the lexical / semantic products (bounds memory to block x n floats).
BLOCK_ROWS = 1024


def _top_k_rows(scores: np.ndarray, k: int, row_offset: int,
                positive_only: bool) -> tuple[np.ndarray, np.ndarray]:
    """Top-``k`` columns of each row of a dense block (self excluded), ties to the lower column."""
    n_rows, n_cols = scores.shape
    if k <= 0 or n_cols <= 1:
        return np.empty(0, np.int64), np.empty(0, np.int64)
    scores = scores.astype(np.float64, copy=True)
    rows_global = np.arange(n_rows) + row_offset
    scores[np.arange(n_rows), rows_global] = -np.inf
    kk = min(k, n_cols - 1)
    # stable descending sort: lexsort on (column, -score) keeps lower columns first among ties
    order = np.argsort(-scores, axis=1, kind="stable")[:, :kk]
    top = np.take_along_axis(scores, order, axis=1)
    keep = np.isfinite(top)
    if positive_only:
        keep &= top > 0
    src = np.repeat(rows_global, kk).reshape(n_rows, kk)
    return src[keep].astype(np.int64), order[keep].astype(np.int64)


def lexical_neighbors(term_matrix: sp.spmatrix, k: int) -> tuple[np.ndarray, np.ndarray]:
    """``(src, dst)`` directed edges to each chunk's ``k`` lexical neighbours.

    ``term_matrix`` is chunks x keywords; any non-zero counts as "contains". The similarity of
    two chunks is the number of distinct keywords they share.
    """
    x = sp.csr_matrix(term_matrix, dtype=np.float64)
    x.data[:] = 1.0
    xt = x.T.tocsc()
    srcs, dsts = [], []
    for start in range(0, x.shape[0], BLOCK_ROWS):
        block = (x[start:start + BLOCK_ROWS] @ xt).toarray()
        s, d = _top_k_rows(block, k, start, positive_only=True)
        srcs.append(s)
        dsts.append(d)
    if not srcs:
        return np.empty(0, np.int64), np.empty(0, np.int64)
    return np.concatenate(srcs), np.concatenate(dsts)


def semantic_neighbors(vectors: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """``(src, dst)`` directed edges to each chunk's ``k`` most cosine-similar chunks."""
    v = np.asarray(vectors, dtype=np.float32)
    if v.ndim != 2:
        raise ValueError("vectors must be a 2-D array")
    norms = np.linalg.norm(v, axis=1, keepdims=True)
    v = (v / np.where(norms == 0, 1, norms)).astype(np.float32, copy=False)
    srcs, dsts = [], []
    for start in range(0, v.shape[0], BLOCK_ROWS):
        block = v[start:start + BLOCK_ROWS] @ v.T
        s, d = _top_k_rows(block, k, start, positive_only=False)
        srcs.append(s)
        dsts.append(d)
    if not srcs:
        return np.empty(0, np.int64), np.empty(0, np.int64)
    return np.concatenate(srcs), np.concatenate(dsts)


def knn_graph(n: int, *edge_sets: tuple[np.ndarray, np.ndarray]) -> sp.csr_matrix:
    """Symmetric 0/1 adjacency (CSR, no self-loops) of the union of directed edge sets."""
    src = np.concatenate([e[0] for e in edge_sets]) if edge_sets else np.empty(0, np.int64)
    dst = np.concatenate([e[1] for e in edge_sets]) if edge_sets else np.empty(0, np.int64)
    keep = src != dst
    src, dst = src[keep], dst[keep]
    rows = np.concatenate([src, dst])
    cols = np.concatenate([dst, src])
    adj = sp.csr_matrix((np.ones(len(rows)), (rows, cols)), shape=(n, n))
    adj.data[:] = 1.0  # duplicates were summed; the graph is unweighted
    adj.sum_duplicates()
    adj.data[:] = 1.0
    return adj


def build_chunk_knn_graph(term_matrix: sp.spmatrix, vectors: np.ndarray, k: int) -> sp.csr_matrix:
    """The paper's KNN graph: union of ``k`` lexical and ``k`` semantic neighbours per chunk."""
    n = term_matrix.shape[0]
    if vectors.shape[0] != n:
        raise ValueError("term_matrix and vectors must have one row per chunk")
    return knn_graph(n, lexical_neighbors(term_matrix, k), semantic_neighbors(vectors, k))


def pagerank(adj: sp.spmatrix, alpha: float = 0.85, *, tol: float = 1e-10,
             max_iter: int = 1000) -> np.ndarray:
    """PageRank of an (undirected or directed) 0/1 adjacency by power iteration.

    ``pi = alpha * pi P + (1 - alpha) / n``, with ``P[u, v] = 1 / outdeg(u)``; nodes without
    edges send their mass uniformly. Converges when the L1 change is below ``n * tol``.
    """
    a = sp.csr_matrix(adj, dtype=np.float64)
    n = a.shape[0]
    if n == 0:
        return np.zeros(0)
    out_deg = np.asarray(a.sum(axis=1)).ravel()
    dangling = out_deg == 0
    inv = np.divide(1.0, out_deg, out=np.zeros(n), where=~dangling)
    p_t = (sp.diags(inv) @ a).T.tocsr()  # column-stochastic transpose
    pi = np.full(n, 1.0 / n)
    for _ in range(max_iter):
        new = alpha * (p_t @ pi + pi[dangling].sum() / n) + (1.0 - alpha) / n
        if np.abs(new - pi).sum() < n * tol:
            pi = new
            break
        pi = new
    return pi / pi.sum()


def select_key_chunks(scores: np.ndarray, budget: float, *, method: str = "pagerank",
                      seed: int = 42) -> np.ndarray:
    """Ids of the ``floor(budget * n)`` key chunks, best first (or a seeded uniform sample).

    Ranked by score descending, ties to the lower id. ``method="uniform"`` samples without
    replacement with ``numpy.random.default_rng(seed)`` and returns the sample in id order.
    """
    n = len(scores)
    count = int(math.floor(budget * n + 1e-9))
    if count <= 0:
        return np.empty(0, np.int64)
    if method == "uniform":
        rng = np.random.default_rng(seed)
        return np.sort(rng.choice(n, size=count, replace=False)).astype(np.int64)
    if method != "pagerank":
        raise ValueError("method must be 'pagerank' or 'uniform'")
    order = np.lexsort((np.arange(n), -np.asarray(scores, dtype=np.float64)))
    return order[:count].astype(np.int64)
