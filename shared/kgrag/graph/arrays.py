"""Array helpers for the in-memory graph: sorting and de-duplicating edges, sorted-set tests
and range expansion on numpy id arrays (shared by storage, traversal and SimGRAG's search).

numpy's general routines (``np.unique``, ``np.isin``) hash or sort more than these cases need;
each helper here says which special case it exploits.
"""

from __future__ import annotations

import numpy as np

INDEX_DTYPE = np.int32
_INT64_LIMIT = 2**62  # packed sort keys stay below this (headroom for the arithmetic)


def _sort_unique_edges(edges: list[np.ndarray], n: int, r: int) -> list[np.ndarray]:
    """``[heads, rels, tails]`` sorted by ``(head, relation, tail)`` without duplicates.

    When ``(head * R + relation) * N + tail`` fits in an int64 the three arrays are packed into
    one key (and the given list is emptied, so the int64 inputs are freed early): input that is
    already strictly increasing (a saved graph) is only checked, other input is sorted on that
    key and de-duplicated; the key is then unpacked into int32 arrays. Otherwise ``np.lexsort``.
    """
    heads, rels, tails = edges
    if len(heads) == 0:
        return [heads, rels, tails]
    if n * n * max(r, 1) < _INT64_LIMIT:
        edges.clear()
        key = heads * r
        del heads
        key += rels
        del rels
        key *= n
        key += tails
        del tails
        if len(key) > 1 and not np.all(key[1:] > key[:-1]):
            key.sort()  # np.sort + a mask: much faster than np.unique on large int64 arrays
            keep = np.empty(len(key), dtype=bool)
            keep[0] = True
            np.not_equal(key[1:], key[:-1], out=keep[1:])
            key = key[keep]
            del keep
        tails = np.empty(len(key), INDEX_DTYPE)
        np.remainder(key, n, out=tails, casting="unsafe")
        key //= n
        rels = np.empty(len(key), INDEX_DTYPE)
        np.remainder(key, r, out=rels, casting="unsafe")
        key //= r
        return [key.astype(INDEX_DTYPE), rels, tails]
    order = np.lexsort((tails, rels, heads))
    heads, rels, tails = heads[order], rels[order], tails[order]
    if len(heads) > 1:
        keep = np.ones(len(heads), dtype=bool)
        keep[1:] = (heads[1:] != heads[:-1]) | (rels[1:] != rels[:-1]) | (tails[1:] != tails[:-1])
        heads, rels, tails = heads[keep], rels[keep], tails[keep]
    return [heads, rels, tails]


def _count_equal(a: np.ndarray, b: np.ndarray, chunk: int = 1 << 20) -> int:
    """``count_nonzero(a == b)`` in chunks (no full-size temporary for mapped arrays)."""
    return sum(int(np.count_nonzero(a[i:i + chunk] == b[i:i + chunk]))
               for i in range(0, len(a), chunk))


def _unique(values: np.ndarray) -> np.ndarray:
    """Sorted distinct values (``np.sort`` + a mask: many times faster than ``np.unique`` for
    int64 arrays in numpy 2.x, which matters on every traversal step)."""
    values = np.sort(values)
    if len(values) < 2:
        return values
    keep = np.empty(len(values), dtype=bool)
    keep[0] = True
    np.not_equal(values[1:], values[:-1], out=keep[1:])
    return values[keep]


def _isin_sorted(values: np.ndarray, sorted_set: np.ndarray) -> np.ndarray:
    """``np.isin(values, sorted_set)`` for a sorted ``sorted_set`` (binary search, no hashing)."""
    if len(sorted_set) == 0:
        return np.zeros(len(values), dtype=bool)
    idx = np.searchsorted(sorted_set, values)
    idx[idx == len(sorted_set)] = 0
    return sorted_set[idx] == values


def _range_positions(starts: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """``concat(arange(s, s + c) for s, c in zip(starts, counts))`` with one cumulative sum."""
    nonzero = counts > 0
    if not nonzero.all():
        starts, counts = starts[nonzero], counts[nonzero]
    if len(counts) == 0:
        return np.empty(0, np.int64)
    if len(counts) == 1:
        return np.arange(int(starts[0]), int(starts[0]) + int(counts[0]), dtype=np.int64)
    ends = np.cumsum(counts)
    steps = np.ones(int(ends[-1]), dtype=np.int64)
    steps[0] = starts[0]
    # at the first position of each later range, jump from the previous range's last position
    steps[ends[:-1]] = starts[1:] - (starts[:-1] + counts[:-1] - 1)
    return np.cumsum(steps)


def expand_ranges(starts: np.ndarray, counts: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Positions ``starts[i] .. starts[i]+counts[i]-1`` for all i, and the owner ``i`` of each."""
    if len(counts) == 1:  # the common single-node case, without the repeat/cumsum machinery
        start, count = int(starts[0]), int(counts[0])
        return np.arange(start, start + count, dtype=np.int64), np.zeros(count, np.int64)
    counts = counts.astype(np.int64, copy=False)
    total = int(counts.sum())
    if total == 0:
        return np.empty(0, np.int64), np.empty(0, np.int64)
    owner = np.repeat(np.arange(len(counts), dtype=np.int64), counts)
    offsets = np.cumsum(counts) - counts
    positions = np.arange(total, dtype=np.int64) - np.repeat(offsets, counts) + np.repeat(
        starts.astype(np.int64, copy=False), counts
    )
    return positions, owner
