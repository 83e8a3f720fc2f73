"""Ranking and answer-set metrics used by the UltRAG evidence runs (notes §5, case 13)."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from kgrag.eval.ranking import answer_set_metrics, tie_aware_metrics


def brute_force(scores, gold, exclude=(), ks=(1, 10)):
    """Average over every ordering of the tied entities (what the closed form must equal)."""
    scores = np.asarray(scores, dtype=float)
    gold = set(gold)
    if not gold or max(scores[list(gold)]) <= 0:
        return {"mrr": 0.0, **{f"hits@{k}": 0.0 for k in ks}}
    ids = [i for i in range(len(scores)) if i in gold or i not in set(exclude)]
    levels = sorted({scores[i] for i in ids}, reverse=True)
    blocks = [[i for i in ids if scores[i] == s] for s in levels]
    totals = {"mrr": 0.0, **{f"hits@{k}": 0.0 for k in ks}}
    orders = list(itertools.product(*[itertools.permutations(b) for b in blocks]))
    for combo in orders:
        ranking = [i for block in combo for i in block]
        first = next(r for r, i in enumerate(ranking, start=1) if i in gold)
        totals["mrr"] += 1 / first
        for k in ks:
            totals[f"hits@{k}"] += float(first <= k)
    return {key: value / len(orders) for key, value in totals.items()}


@pytest.mark.parametrize("scores, gold, exclude", [
    ([1, 1, 1, 0.5], [0], []),
    ([1, 1, 1, 0.5], [3], []),
    ([1, 1, 1, 1, 0.2], [1, 3], []),
    ([0.9, 0.4, 0.4, 0.4, 0.1], [2], [0]),
    ([0.3, 0.3, 0.3, 0.3, 0.3, 0.3, 0.3], [6], []),
    ([1, 0, 0], [1], []),
    ([0.5, 0.5, 0.2], [], []),
])
def test_tie_aware_metrics_match_brute_force_enumeration(scores, gold, exclude):
    got = tie_aware_metrics(np.array(scores), gold, ks=(1, 2, 10), exclude=exclude)
    expected = brute_force(scores, gold, exclude, ks=(1, 2, 10))
    assert got == pytest.approx(expected)


def test_hand_made_ranking_examples():
    s = np.array([0.9, 0.8, 0.7, 0.6])
    assert tie_aware_metrics(s, [2]) == {"mrr": pytest.approx(1 / 3), "hits@1": 0.0,
                                         "hits@10": 1.0}
    assert tie_aware_metrics(s, [2, 1])["mrr"] == pytest.approx(0.5)  # first gold counts
    assert tie_aware_metrics(s, [0], exclude=[0])["hits@1"] == 1.0  # gold is never excluded
    assert tie_aware_metrics(s, [3], exclude=[0, 1])["mrr"] == pytest.approx(0.5)


def test_answer_set_metrics():
    assert answer_set_metrics(["a", "b"], ["a", "b"]) == {"hits": 1.0, "precision": 1.0,
                                                          "recall": 1.0, "f1": 1.0}
    assert answer_set_metrics([], ["a"]) == {"hits": 0.0, "precision": 0.0, "recall": 0.0,
                                             "f1": 0.0}
    m = answer_set_metrics(["a", "b", "c"], ["a", "d"])
    assert m["hits"] == 1.0 and m["precision"] == pytest.approx(1 / 3)
    assert m["recall"] == 0.5 and m["f1"] == pytest.approx(0.4)
