"""Questions with gold answers: :class:`QAExample` and the reader of a user's JSONL file.

They live here, below ``methods`` and ``eval``, because both read them: ``kgrag eval`` scores
methods on them and GraphRAFT synthesises its training data from them
(:func:`kgrag.methods.graphraft.training.read_qa_pairs`). :mod:`kgrag.eval` re-exports both.
"""

from __future__ import annotations

import json
import random
import re
from dataclasses import dataclass, field
from pathlib import Path

from kgrag.errors import GraphFormatError
from kgrag.graph.base import PathStep

__all__ = ["QAExample", "load_jsonl"]


@dataclass(frozen=True)
class QAExample:
    """One question with its gold answers (and, where known, topic entities and relation path)."""

    question: str
    answers: tuple[str, ...]
    entities: tuple[str, ...] = ()
    relation_path: tuple[PathStep, ...] = ()
    qtype: str = ""
    id: str = ""
    #: gold intermediate entities when annotated (PathQuestion), in path order
    path_entities: tuple[str, ...] = field(default=(), compare=False)

    @property
    def question_text(self) -> str:
        """The question without MetaQA's ``[topic]`` brackets."""
        return re.sub(r"\[([^\]]+)\]", r"\1", self.question)


def _sample(items: list, limit: int | None, seed: int) -> list:
    if limit is None or limit >= len(items):
        return items
    rng = random.Random(seed)
    picked = sorted(rng.sample(range(len(items)), limit))
    return [items[i] for i in picked]


def load_jsonl(path: str | Path, *, limit: int | None = None, seed: int = 0) -> list[QAExample]:
    """A user's own questions: JSONL of ``{"question", "answers", "entities"?, "id"?}``."""
    path = Path(path)
    examples = []
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except json.JSONDecodeError as exc:
            raise GraphFormatError(f"not JSON: {exc}", path=str(path), line=number) from None
        if not isinstance(record, dict) or not isinstance(record.get("question"), str):
            raise GraphFormatError("each line needs a 'question' string", path=str(path), line=number)
        answers = record.get("answers", record.get("answer", []))
        if isinstance(answers, str):
            answers = [answers]
        entities = record.get("entities", [])
        examples.append(QAExample(
            question=record["question"],
            answers=tuple(str(a) for a in answers),
            entities=tuple(str(e) for e in (entities if isinstance(entities, list) else [entities])),
            id=str(record.get("id", f"{path.stem}-{number}")),
        ))
    return _sample(examples, limit, seed)
