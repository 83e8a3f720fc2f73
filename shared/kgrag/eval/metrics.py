"""Answer and retrieval metrics, per question (average them over a dataset).

Answers are compared after :func:`normalize_answer` (lower case, punctuation and articles
removed, whitespace collapsed: the SQuAD convention; typographic quotes and dashes count as
punctuation too), so "The Matrix" matches "matrix".
"""

from __future__ import annotations

import re
import string
import unicodedata
from collections import Counter
from typing import Iterable, Sequence

_ARTICLES = re.compile(r"\b(a|an|the)\b")
# ASCII punctuation plus the typographic quotes and dashes that NFKC leaves in place
_PUNCT = str.maketrans("", "", string.punctuation + "\u2018\u2019\u201c\u201d\u2013\u2014\u2026")
_POSSESSIVE = re.compile(r"(?<=\w)['\u2019]s\b")


def normalize_answer(text: str) -> str:
    text = unicodedata.normalize("NFKC", str(text)).lower().translate(_PUNCT)
    text = _ARTICLES.sub(" ", text)
    return " ".join(text.split())


def _gold_set(gold: Iterable[str]) -> set[str]:
    return {g for g in (normalize_answer(x) for x in gold) if g}


def hits_at_k(predictions: Sequence[str], gold: Iterable[str], k: int = 1) -> float:
    """1.0 when any of the top-``k`` predictions is a gold answer."""
    golds = _gold_set(gold)
    return float(any(normalize_answer(p) in golds for p in predictions[:k]))


def reciprocal_rank(predictions: Sequence[str], gold: Iterable[str]) -> float:
    """1 / rank of the first gold prediction (0.0 when none is gold)."""
    golds = _gold_set(gold)
    for rank, p in enumerate(predictions, start=1):
        if normalize_answer(p) in golds:
            return 1.0 / rank
    return 0.0


def exact_match(prediction: str, gold: Iterable[str]) -> float:
    """1.0 when the prediction equals one gold answer."""
    return float(normalize_answer(prediction) in _gold_set(gold))


def token_f1(prediction: str, gold: Iterable[str]) -> float:
    """Best token-level F1 of the prediction against any gold answer."""
    pred_tokens = normalize_answer(prediction).split()
    best = 0.0
    for g in gold:
        gold_tokens = normalize_answer(g).split()
        common = Counter(pred_tokens) & Counter(gold_tokens)
        overlap = sum(common.values())
        if not overlap:
            continue
        precision, recall = overlap / len(pred_tokens), overlap / len(gold_tokens)
        best = max(best, 2 * precision * recall / (precision + recall))
    return best


def answer_recall(context: str | Iterable[str], gold: Iterable[str]) -> float:
    """Fraction of gold answers present in the retrieved context.

    ``context`` is either text (an answer counts when its normalised form occurs as a whole
    phrase) or an iterable of retrieved names (an answer counts when it is one of them).
    """
    golds = _gold_set(gold)
    if not golds:
        return 0.0
    if isinstance(context, str):
        # "Arsenio Hall's show" holds the answer "Arsenio Hall": the SQuAD normalisation makes
        # the possessive "halls", so the text is also searched with possessives cut; the plain
        # text still counts, for names that contain one ("Hall's Harbour")
        texts = {f" {normalize_answer(text)} " for text in (context, _POSSESSIVE.sub("", context))}
        return sum(any(f" {g} " in t for t in texts) for g in golds) / len(golds)
    names = {normalize_answer(c) for c in context}
    return len(golds & names) / len(golds)


def recall_at_k(predictions: Sequence[str], gold: Iterable[str], k: int = 20) -> float:
    golds = _gold_set(gold)
    if not golds:
        return 0.0
    return len(golds & {normalize_answer(p) for p in predictions[:k]}) / len(golds)
