"""Loaders for the KGQA datasets in ``../shared/data`` and for a user's own QA file.

Every loader returns :class:`QAExample` objects. For MetaQA and PathQuestion the example also
carries the *gold relation path* (from MetaQA's question type, or PathQuestion's annotated path),
which lets an evaluation play a perfect LLM: hand a method the artifacts a correct LLM would write
and measure whether retrieval then finds the gold answers.

Formats:

* MetaQA: ``<hop>-hop/test.txt`` lines ``question with [topic]\\tans1|ans2`` and a parallel
  ``qa_test_qtype.txt`` (``movie_to_director_to_movie`` ...); KB ``kb_reconstructed.txt``
  (``subject|relation|object``).
* PathQuestion: ``question\\tanswer(alt1/alt2/)\\tsubj#r1#e1#r2#...#ans[#<end>#ans]``; KB
  tab-separated triples.
* Generic: a JSONL file of ``{"question": ..., "answers": [...], "entities": [...]?}``.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Iterable, Sequence

from kgrag.errors import GraphFormatError
from kgrag.graph.base import PathStep
from kgrag.questions import QAExample, _sample, load_jsonl

__all__ = ["QAExample", "load_jsonl", "load_metaqa", "load_pathquestion", "metaqa_relation_path",
           "relation_path_text"]

#: MetaQA entity types -> (relation, direction as seen from the movie).
_METAQA_RELATION = {
    "actor": "starred_actors",
    "director": "directed_by",
    "writer": "written_by",
    "genre": "has_genre",
    "language": "in_language",
    "year": "release_year",
    "tags": "has_tags",
    "tag": "has_tags",
    "imdbrating": "has_imdb_rating",
    "imdbvotes": "has_imdb_votes",
    "rating": "has_imdb_rating",
    "votes": "has_imdb_votes",
}


def metaqa_relation_path(qtype: str) -> tuple[PathStep, ...]:
    """The relation path of a MetaQA question type.

    ``movie_to_director_to_movie`` -> ``directed_by (out), directed_by (in)``: every hop joins a
    movie and an attribute; leaving a movie follows the relation forwards, arriving at one
    follows it backwards.

    >>> [(s.relation, s.direction) for s in metaqa_relation_path("actor_to_movie_to_year")]
    [('starred_actors', 'in'), ('release_year', 'out')]
    """
    parts = qtype.strip().split("_to_")
    if len(parts) < 2:
        raise ValueError(f"not a MetaQA question type: {qtype!r}")
    steps = []
    for a, b in zip(parts, parts[1:]):
        if a == "movie" and b in _METAQA_RELATION:
            steps.append(PathStep(_METAQA_RELATION[b], "out"))
        elif b == "movie" and a in _METAQA_RELATION:
            steps.append(PathStep(_METAQA_RELATION[a], "in"))
        else:
            raise ValueError(f"unknown MetaQA hop {a}_to_{b} in {qtype!r}")
    return tuple(steps)


def load_metaqa(root: str | Path, hop: int, *, split: str = "test", limit: int | None = None,
                seed: int = 0) -> list[QAExample]:
    """MetaQA ``hop``-hop questions (``limit`` = a seeded random sample, in file order)."""
    base = Path(root) / f"{hop}-hop"
    q_path = base / f"{split}.txt"
    t_path = base / f"qa_{split}_qtype.txt"
    lines = q_path.read_text(encoding="utf-8").splitlines()
    qtypes = (t_path.read_text(encoding="utf-8").splitlines() if t_path.exists()
              else [""] * len(lines))
    if len(qtypes) != len(lines):
        raise GraphFormatError(f"{t_path} has {len(qtypes)} lines, {q_path} has {len(lines)}",
                               path=str(t_path))
    examples = []
    for number, (line, qtype) in enumerate(zip(lines, qtypes), start=1):
        if not line.strip():
            continue
        question, sep, answers = line.partition("\t")
        if not sep:
            raise GraphFormatError("expected 'question\\tanswers'", path=str(q_path), line=number)
        topics = tuple(re.findall(r"\[([^\]]+)\]", question))
        examples.append(QAExample(
            question=question.strip(),
            answers=tuple(a for a in answers.strip().split("|") if a),
            entities=topics,
            relation_path=metaqa_relation_path(qtype) if qtype else (),
            qtype=qtype.strip(),
            id=f"metaqa-{hop}hop-{number}",
        ))
    return _sample(examples, limit, seed)


def _split_pathquestion_answers(field_text: str) -> list[str]:
    """``main(alt1/alt2/)`` -> [main, alt1, alt2]; answers may hold parentheses (``PG_(USA)``).

    The alternatives are the *last* balanced parenthesised group at the end of the field.
    """
    text = field_text.strip()
    if not text.endswith(")"):
        return [text]
    depth = 0
    for i in range(len(text) - 1, -1, -1):
        if text[i] == ")":
            depth += 1
        elif text[i] == "(":
            depth -= 1
            if depth == 0:
                main, inner = text[:i], text[i + 1 : -1]
                if not main:  # the whole field is one parenthesised name
                    return [text]
                return [main] + [a for a in inner.split("/") if a]
    return [text]


def load_pathquestion(path: str | Path, *, limit: int | None = None,
                      seed: int = 0) -> list[QAExample]:
    """PathQuestion (PQ / PQL) questions with their annotated relation paths."""
    path = Path(path)
    examples = []
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        if not line.strip():
            continue
        fields = line.split("\t")
        if len(fields) < 3:
            raise GraphFormatError("expected question, answer and path fields", path=str(path),
                                   line=number)
        question, answer_field, path_field = fields[0].strip(), fields[1].strip(), fields[2].strip()
        answers = _split_pathquestion_answers(answer_field)
        chain = path_field.split("#<end>#")[0].split("#")
        if len(chain) < 3 or len(chain) % 2 == 0:
            raise GraphFormatError(f"malformed path {path_field!r}", path=str(path), line=number)
        entities = chain[0::2]
        relations = chain[1::2]
        examples.append(QAExample(
            question=question,
            answers=tuple(dict.fromkeys(a.strip() for a in answers if a.strip())),
            entities=(entities[0],),
            relation_path=tuple(PathStep(r, "out") for r in relations),
            qtype=f"{len(relations)}-hop",
            id=f"{path.stem}-{number}",
            path_entities=tuple(entities),
        ))
    return _sample(examples, limit, seed)


def relation_path_text(steps: Sequence[PathStep]) -> str:
    """``r1 -> r2_inv``: a path as the text kgrag's parsers read back."""
    return " -> ".join(s.relation + ("_inv" if s.direction == "in" else "") for s in steps)


def answer_set(examples: Iterable[QAExample]) -> set[str]:
    return {a for ex in examples for a in ex.answers}
