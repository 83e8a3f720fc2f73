"""Fuzzy name matching: one normalisation, a deliberate scorer, and a fast candidate filter.

**Normalisation** (:func:`name_key`): case-folded alphanumeric tokens joined by single spaces,
so "Spider-Man: Far From Home" and "spider man far from home" are the same key.

**Scorer** (:func:`coverage_wratio`): rapidfuzz's ``WRatio`` idea with one deliberate change.
``WRatio`` gives any string found inside the other 90 points (``partial_ratio`` x 0.9) when
the lengths differ by 1.5-8x, so for "Jamaican people" the names "an", "People", "Jamaica"
and "Jamaican" all tie at 90 and the order is arbitrary. We keep the partial and token-subset
credit (it is what makes "Jamaica" match "Jamaican people" at all; the ByoKG-RAG reference code
instead drops candidates shorter than ``len(mention) - 4`` and so never returns "Jamaica") but
scale it by how much of the longer string the shorter one covers::

    c = len(shorter) / len(longer)
    score = max(ratio, 0.95 * token_sort_ratio)
    if c < 2/3:   score = max(score, 0.9 * (0.6 + 0.6 * c) * max(partial_ratio, token_set_ratio))
    else:         score = max(score, 0.95 * token_set_ratio)

For "Jamaican people": Jamaica 79, People 76, an 61, Jamaican dollar 73.

**Speed**: scoring every name with four rapidfuzz scorers costs ~1 us per name, too slow for
1M names. Above ``full_scan_limit`` names we first pick ``candidates`` names by TF-IDF cosine
of character trigrams (an inverted index over hashed trigrams held in numpy arrays, built
vectorised), then score only those. A name sharing no trigram with the mention cannot be found
this way, but such a name also has a low fuzzy score.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence

import numpy as np

_TOKEN = re.compile(r"[^\W_]+")
_HASH_MUL = np.uint64(1_000_003)


def name_key(text: str) -> str:
    """Case-folded alphanumeric tokens joined by one space (the key for exact matching)."""
    return " ".join(_TOKEN.findall(str(text).casefold()))


def coverage_wratio(query_key: str, choice_keys: Sequence[str],
                    choice_lengths: np.ndarray | None = None) -> np.ndarray:
    """Scores in [0, 100] of ``query_key`` against every choice (see module docstring)."""
    from rapidfuzz import fuzz, process

    n = len(choice_keys)
    if n == 0 or not query_key:
        return np.zeros(n, dtype=np.float32)

    def run(scorer) -> np.ndarray:
        return process.cdist([query_key], choice_keys, scorer=scorer, processor=None,
                             dtype=np.float32)[0]

    if choice_lengths is None:
        choice_lengths = np.fromiter((len(k) for k in choice_keys), dtype=np.float32, count=n)
    lq = float(len(query_key))
    lengths = choice_lengths.astype(np.float32)
    with np.errstate(divide="ignore", invalid="ignore"):
        cover = np.minimum(lengths, lq) / np.maximum(np.maximum(lengths, lq), 1.0)
    score = np.maximum(run(fuzz.ratio), 0.95 * run(fuzz.token_sort_ratio))
    token_set = run(fuzz.token_set_ratio)
    partial_regime = cover < (2.0 / 3.0)
    if partial_regime.any():
        idx = np.flatnonzero(partial_regime)
        sub = [choice_keys[int(i)] for i in idx]
        partial = process.cdist([query_key], sub, scorer=fuzz.partial_ratio, processor=None,
                                dtype=np.float32)[0]
        weight = 0.9 * (0.6 + 0.6 * cover[idx])
        score[idx] = np.maximum(score[idx], weight * np.maximum(partial, token_set[idx]))
    full = ~partial_regime
    score[full] = np.maximum(score[full], 0.95 * token_set[full])
    return score


def _trigram_hashes(padded_codes: np.ndarray) -> np.ndarray:
    """Hash of every window of three code points (uint64, wrapping arithmetic)."""
    c = padded_codes.astype(np.uint64)
    return ((c[:-2] * _HASH_MUL) ^ c[1:-1]) * _HASH_MUL ^ c[2:]


class TrigramIndex:
    """Inverted index of hashed character trigrams with TF-IDF weights (rows L2-normalised).

    ``top_candidates(key, k)`` returns the ids of the ``k`` keys with the highest TF-IDF cosine
    to ``key`` (those sharing at least one trigram), computed with one ``np.bincount`` over the
    postings of the query's trigrams. Query trigrams found in more than ``common_fraction`` of
    the keys (and at least 1000) are skipped when the query has ``keep_common_below`` rarer
    ones: their postings are long and their idf weight small.
    """

    def __init__(self, keys: Sequence[str], *, common_fraction: float = 0.02,
                 keep_common_below: int = 4) -> None:
        self.num_keys = n = len(keys)
        self.common_df = max(1000, int(common_fraction * n))
        self.keep_common_below = keep_common_below
        padded = [f" {k} " for k in keys]
        lengths = np.fromiter((len(p) for p in padded), dtype=np.int64, count=n)
        total_trigrams = int(np.maximum(lengths - 2, 0).sum())
        self.num_buckets = int(min(1 << 20, max(1024, 1 << int(2 * total_trigrams).bit_length())))
        codes = np.frombuffer("".join(padded).encode("utf-32-le"), dtype=np.uint32)
        hashes = _trigram_hashes(codes) if len(codes) >= 3 else np.empty(0, np.uint64)
        # Valid windows start at offset 0 .. len-3 inside each padded key.
        seg_start = np.cumsum(lengths) - lengths
        counts = np.maximum(lengths - 2, 0)
        owner = np.repeat(np.arange(n, dtype=np.int64), counts)
        pos = np.arange(total_trigrams, dtype=np.int64) - np.repeat(np.cumsum(counts) - counts,
                                                                    counts)
        pos += np.repeat(seg_start, counts)
        bucket = (hashes[pos] % np.uint64(self.num_buckets)).astype(np.int64)
        # One sort by (bucket, owner) gives both the term frequencies (runs of equal pairs)
        # and the postings order (bucket-major), instead of np.unique plus an argsort.
        pair = np.sort(bucket * max(n, 1) + owner)
        if len(pair):
            starts = np.flatnonzero(np.r_[True, pair[1:] != pair[:-1]])
            tf = np.diff(np.r_[starts, len(pair)])
            pair = pair[starts]
        else:
            tf = np.empty(0, np.int64)
        bucket, owner = pair // max(n, 1), pair % max(n, 1)
        df = np.bincount(bucket, minlength=self.num_buckets)
        self.df = df
        self.idf = (np.log((n + 1) / (df + 1)) + 1.0).astype(np.float32)
        weight = tf.astype(np.float32) * self.idf[bucket]
        norm = np.sqrt(np.bincount(owner, weights=weight.astype(np.float64) ** 2, minlength=n))
        norm[norm == 0] = 1.0
        self.post_owner = owner.astype(np.int32)
        self.post_weight = (weight / norm[owner]).astype(np.float32)
        self.indptr = np.zeros(self.num_buckets + 1, dtype=np.int64)
        np.cumsum(df, out=self.indptr[1:])

    def _query_buckets(self, key: str) -> tuple[np.ndarray, np.ndarray]:
        codes = np.frombuffer(f" {key} ".encode("utf-32-le"), dtype=np.uint32)
        if len(codes) < 3:
            return np.empty(0, np.int64), np.empty(0, np.float32)
        buckets = (_trigram_hashes(codes) % np.uint64(self.num_buckets)).astype(np.int64)
        uniq, tf = np.unique(buckets, return_counts=True)
        if len(uniq) > self.keep_common_below:
            # Very common trigrams (" th", "the") add little (low idf) but long postings; keep
            # them only when the query has few rarer trigrams to go on.
            order = np.argsort(self.df[uniq], kind="stable")
            common = self.df[uniq[order]] > self.common_df
            keep = order[~common | (np.arange(len(order)) < self.keep_common_below)]
            uniq, tf = uniq[keep], tf[keep]
        w = tf.astype(np.float32) * self.idf[uniq]
        norm = float(np.linalg.norm(w))
        return uniq, (w / norm if norm > 0 else w)

    def scores(self, key: str) -> np.ndarray:
        """TF-IDF cosine of ``key`` with every indexed key (dense float32 array)."""
        buckets, qw = self._query_buckets(key)
        if len(buckets) == 0:
            return np.zeros(self.num_keys, dtype=np.float32)
        starts, ends = self.indptr[buckets], self.indptr[buckets + 1]
        lens = ends - starts
        idx = np.repeat(starts - np.cumsum(lens) + lens, lens) + np.arange(int(lens.sum()))
        weights = self.post_weight[idx] * np.repeat(qw, lens)
        return np.bincount(self.post_owner[idx], weights=weights,
                           minlength=self.num_keys).astype(np.float32)

    def top_candidates(self, key: str, k: int) -> np.ndarray:
        sims = self.scores(key)
        nonzero = np.flatnonzero(sims > 0)
        if len(nonzero) <= k:
            return nonzero
        part = np.argpartition(-sims[nonzero], k - 1)[:k]
        return nonzero[part]


class FuzzyIndex:
    """Fuzzy search over a fixed list of keys (already normalised with :func:`name_key`)."""

    def __init__(self, keys: Iterable[str], *, full_scan_limit: int = 5000,
                 candidates: int = 256) -> None:
        self.keys: list[str] = list(keys)
        self.lengths = np.fromiter((len(k) for k in self.keys), dtype=np.float32,
                                   count=len(self.keys))
        self.full_scan_limit = full_scan_limit
        self.candidates = candidates
        self._trigrams: TrigramIndex | None = None

    def __len__(self) -> int:
        return len(self.keys)

    @property
    def trigrams(self) -> TrigramIndex:
        if self._trigrams is None:
            self._trigrams = TrigramIndex(self.keys)
        return self._trigrams

    def search(self, query_key: str, limit: int) -> tuple[np.ndarray, np.ndarray]:
        """Ids of the ``limit`` best keys and their scores in [0, 1], best first."""
        if not query_key or not self.keys or limit <= 0:
            return np.empty(0, np.int64), np.empty(0, np.float32)
        if len(self.keys) <= self.full_scan_limit:
            cand = np.arange(len(self.keys))
        else:
            cand = self.trigrams.top_candidates(query_key, max(self.candidates, limit))
        if len(cand) == 0:
            return np.empty(0, np.int64), np.empty(0, np.float32)
        scores = coverage_wratio(query_key, [self.keys[i] for i in cand], self.lengths[cand])
        # Best score first; ties broken by the shorter key, then by id (deterministic).
        order = np.lexsort((cand, self.lengths[cand], -scores))[:limit]
        return cand[order].astype(np.int64), (scores[order] / 100.0).astype(np.float32)
