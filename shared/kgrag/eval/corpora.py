"""Loaders for the text multi-hop QA datasets in ``../shared/data``: MuSiQue and HotpotQA.

Each loader returns the questions as :class:`~kgrag.eval.datasets.QAExample` (answer first,
then its aliases) and the corpus as a list of passage strings, the input a text method such as
KET-RAG indexes. Formats (see the ``SOURCE.md`` next to the data):

* MuSiQue ``ketrag_500`` (KET-RAG's own sample): ``qa-pairs.json`` = ``[{id, question,
  answer}]``; ``document.txt`` = one paragraph per line (no titles). This is what the KET-RAG
  paper evaluated, so it is the default.
* MuSiQue ``hipporag_train100``: ``musique_train.json`` = ``[{id, question, answer,
  answer_aliases, answerable, question_decomposition, paragraphs}]``;
  ``musique_train_corpus.json`` = ``[{title, text}]``.

For both, the question type is MuSiQue's composition type from the id prefix (``2hop``,
``3hop1``, ``3hop2``, ``4hop1`` ...).
* HotpotQA ``hipporag_train100``: ``hotpotqa_train.json`` = original distractor records
  ``{_id, question, answer, type, level, supporting_facts, context}``;
  ``hotpotqa_train_corpus.json`` = ``{title: [sentences]}``.

Passages with a title are written ``"Title: text"`` so the title's words are searchable, as
the KET-RAG coverage benchmark does.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kgrag.errors import GraphFormatError
from kgrag.eval.datasets import QAExample
from kgrag.questions import _sample

MUSIQUE_SUBSETS = ("ketrag_500", "hipporag_train100")


@dataclass(frozen=True)
class TextQADataset:
    """Questions plus the passages they are answered from."""

    examples: list[QAExample]
    passages: list[str]
    name: str = ""


def _read_json(path: Path) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise GraphFormatError(f"not JSON: {exc}", path=str(path)) from None


def _require(record: Any, keys: tuple[str, ...], path: Path, number: int) -> dict:
    if not isinstance(record, dict) or any(k not in record for k in keys):
        raise GraphFormatError(f"record {number} needs the fields {', '.join(keys)}",
                               path=str(path), line=number)
    return record


def _answers(answer: Any, aliases: Any = ()) -> tuple[str, ...]:
    values = [answer] + list(aliases or [])
    return tuple(dict.fromkeys(str(v).strip() for v in values if str(v).strip()))


def _hop_type(qid: str) -> str:
    """MuSiQue's composition type from the id: ``2hop``, ``3hop1``, ``4hop3`` ..."""
    head = qid.split("__", 1)[0]
    return head if re.fullmatch(r"\d+hop\d*", head) else ""


def load_musique(root: str | Path, *, subset: str = "ketrag_500", limit: int | None = None,
                 seed: int = 0) -> TextQADataset:
    """MuSiQue questions and passages from ``root`` (the ``musique`` data directory).

    ``limit`` samples questions (seeded, file order kept); the corpus is always complete, since
    questions share it.
    """
    if subset not in MUSIQUE_SUBSETS:
        raise ValueError(f"subset must be one of {MUSIQUE_SUBSETS}, got {subset!r}")
    base = Path(root) / subset
    examples: list[QAExample] = []
    if subset == "ketrag_500":
        qa_path = base / "qa-pairs.json"
        for number, rec in enumerate(_read_json(qa_path), start=1):
            rec = _require(rec, ("id", "question", "answer"), qa_path, number)
            examples.append(QAExample(question=rec["question"].strip(),
                                      answers=_answers(rec["answer"], rec.get("answer_aliases")),
                                      qtype=_hop_type(str(rec["id"])), id=str(rec["id"])))
        doc_path = base / "document.txt"
        passages = [line.strip() for line in doc_path.read_text(encoding="utf-8").splitlines()
                    if line.strip()]
    else:
        qa_path = base / "musique_train.json"
        for number, rec in enumerate(_read_json(qa_path), start=1):
            rec = _require(rec, ("id", "question", "answer"), qa_path, number)
            examples.append(QAExample(question=rec["question"].strip(),
                                      answers=_answers(rec["answer"], rec.get("answer_aliases")),
                                      qtype=_hop_type(str(rec["id"])), id=str(rec["id"])))
        corpus_path = base / "musique_train_corpus.json"
        passages = []
        for number, rec in enumerate(_read_json(corpus_path), start=1):
            rec = _require(rec, ("title", "text"), corpus_path, number)
            passages.append(f"{rec['title']}: {' '.join(rec['text'].split())}")
    return TextQADataset(_sample(examples, limit, seed), passages, f"musique-{subset}")


def load_hotpotqa(root: str | Path, *, limit: int | None = None, seed: int = 0) -> TextQADataset:
    """HotpotQA questions (HippoRAG's 100 training questions) and their 994-passage corpus.

    ``qtype`` is ``"<type>/<level>"`` (``bridge/easy``, ``comparison/hard``, ...); yes/no
    comparison answers are kept as they are.
    """
    base = Path(root) / "hipporag_train100"
    qa_path = base / "hotpotqa_train.json"
    examples = []
    for number, rec in enumerate(_read_json(qa_path), start=1):
        rec = _require(rec, ("_id", "question", "answer"), qa_path, number)
        qtype = "/".join(str(rec[k]) for k in ("type", "level") if rec.get(k))
        examples.append(QAExample(question=rec["question"].strip(), answers=_answers(rec["answer"]),
                                  qtype=qtype, id=str(rec["_id"])))
    corpus_path = base / "hotpotqa_train_corpus.json"
    corpus = _read_json(corpus_path)
    if not isinstance(corpus, dict):
        raise GraphFormatError("expected an object {title: [sentences]}", path=str(corpus_path))
    passages = [f"{title}: {''.join(sentences).strip()}" for title, sentences in corpus.items()]
    return TextQADataset(_sample(examples, limit, seed), passages, "hotpotqa-hipporag_train100")
