"""Ranking metrics over a score vector, with exact expected values under random tie-breaking.

An executor scores every entity; fuzzy and especially crisp (0/1) executors produce many ties,
so "the rank of the first gold answer" is a random variable. We report its expectation when
tied entities are ordered uniformly at random (neither optimistic nor pessimistic):

* the first gold answer lies in the block of entities tied with the best gold score ``s*``;
  ``a`` non-gold entities score strictly more, ``n`` non-gold and ``g`` gold entities tie;
* the position ``X`` of the first gold inside the tied block has
  ``P(X > j) = C(n, j) / C(n + g, j)``, so
  ``Hits@k = P(a + X <= k)`` and ``MRR = E[1 / (a + X)]`` are computed exactly.

A question whose gold answers all score 0 counts as a miss (MRR 0, Hits 0): a zero membership
means "not retrieved", and ranking the whole zero-score remainder would be meaningless.
Entities in ``exclude`` (e.g. the topic entity, in the filtered setting) are removed from the
ranking unless they are gold.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import numpy as np


def tie_aware_metrics(scores: np.ndarray, gold: Iterable[int], *, ks: Sequence[int] = (1, 10),
                      exclude: Iterable[int] = ()) -> dict[str, float]:
    """``{"mrr": ..., "hits@1": ..., "hits@10": ...}`` of ``gold`` ids in ``scores``.

    >>> s = np.array([1.0, 1.0, 1.0, 0.5])
    >>> round(tie_aware_metrics(s, [0])["hits@1"], 4)  # one gold among three tied: 1/3
    0.3333
    >>> tie_aware_metrics(s, [3])["mrr"]      # three non-gold above it
    0.25
    """
    scores = np.asarray(scores, dtype=np.float64)
    gold_ids = np.unique(np.fromiter((int(g) for g in gold), dtype=np.int64))
    result = {"mrr": 0.0, **{f"hits@{k}": 0.0 for k in ks}}
    if len(gold_ids) == 0:
        return result
    best = scores[gold_ids].max()
    if best <= 0:
        return result
    is_gold = np.zeros(len(scores), dtype=bool)
    is_gold[gold_ids] = True
    keep = ~is_gold
    excluded = np.fromiter((int(e) for e in exclude), dtype=np.int64)
    if len(excluded):
        keep[excluded] = False
    above = int(np.count_nonzero(keep & (scores > best)))
    tied_other = int(np.count_nonzero(keep & (scores == best)))
    tied_gold = int(np.count_nonzero(is_gold & (scores == best)))
    # survival[j] = P(X > j) for j = 0..n (X in 1..n+1)
    j = np.arange(tied_other + 1, dtype=np.float64)
    factors = (tied_other - j[:-1]) / (tied_other + tied_gold - j[:-1]) if tied_other else \
        np.empty(0)
    survival = np.concatenate([[1.0], np.cumprod(factors)])
    p_first = survival - np.concatenate([survival[1:], [0.0]])  # P(X = j + 1)
    positions = above + np.arange(1, tied_other + 2, dtype=np.float64)
    result["mrr"] = float(np.sum(p_first / positions))
    for k in ks:
        m = k - above
        if m <= 0:
            hits = 0.0
        elif m > tied_other:
            hits = 1.0
        else:
            hits = 1.0 - float(survival[m])
        result[f"hits@{k}"] = hits
    return result


def answer_set_metrics(predicted: Iterable[str], gold: Iterable[str]) -> dict[str, float]:
    """Hits (any gold answer returned), recall and F1 of a predicted answer set.

    >>> answer_set_metrics(["a", "x"], ["a", "b"])
    {'hits': 1.0, 'precision': 0.5, 'recall': 0.5, 'f1': 0.5}
    """
    pred, true = set(predicted), set(gold)
    hit = len(pred & true)
    precision = hit / len(pred) if pred else 0.0
    recall = hit / len(true) if true else 0.0
    f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
    return {"hits": float(hit > 0), "precision": precision, "recall": recall, "f1": f1}
