"""Metrics on hand-computed cases (GraphRAFT notes §5 case 13 and SQuAD-style answers)."""

from __future__ import annotations

import pytest

from kgrag.eval.metrics import (
    answer_recall,
    exact_match,
    hits_at_k,
    normalize_answer,
    recall_at_k,
    reciprocal_rank,
    token_f1,
)


def test_ranking_metrics_hand_computed():
    preds = ["Bonn", "Agra", "Cork"]
    assert hits_at_k(preds, {"Agra"}, 1) == 0.0
    assert hits_at_k(preds, {"Agra"}, 5) == 1.0
    assert reciprocal_rank(preds, {"Agra"}) == 0.5
    assert reciprocal_rank(preds, {"Zug"}) == 0.0
    assert recall_at_k(["Agra", "Bonn", "Xian"], {"Agra", "Bonn", "Cork"},
                       20) == pytest.approx(2 / 3)


def test_answer_normalisation():
    assert normalize_answer("The  Matrix!") == "matrix"
    assert exact_match("the matrix", ["Matrix"]) == 1.0
    assert exact_match("Matrix Reloaded", ["Matrix"]) == 0.0


def test_token_f1():
    assert token_f1("Satoshi Kon", ["Kon Satoshi"]) == 1.0
    assert token_f1("Satoshi", ["Satoshi Kon"]) == pytest.approx(2 / 3)
    assert token_f1("nothing", ["Satoshi Kon"]) == 0.0


def test_answer_recall_text_and_names():
    context = "Tokyo Godfathers -> directed_by -> Satoshi Kon\nParis"
    assert answer_recall(context, ["Satoshi Kon", "Kyoto"]) == 0.5
    assert answer_recall(context, ["Kon Satoshi"]) == 0.0  # whole phrase only
    assert answer_recall("Parisian cafe", ["Paris"]) == 0.0  # no partial-word hits
    assert answer_recall(["Satoshi Kon", "Paris"], ["satoshi kon"]) == 1.0
    assert answer_recall("anything", []) == 0.0


def test_answer_recall_sees_through_possessives_and_typographic_quotes():
    assert answer_recall("Arsenio Hall's talk show", ["Arsenio Hall"]) == 1.0
    assert answer_recall("Arsenio Hall\u2019s talk show", ["Arsenio Hall"]) == 1.0
    assert answer_recall("Hall\u2019s Harbour, Nova Scotia", ["Hall's Harbour"]) == 1.0
    assert answer_recall("the halls of fame", ["Hall"]) == 0.0  # plural, not possessive
    assert normalize_answer("\u201cBig\u201d \u2013 a film") == "big film"
