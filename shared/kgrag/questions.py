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
from kgrag.graph.base import PathStep, parse_relation_path

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
    #: gold branches ``(topic entity, relation path)`` that meet at the answer, for conjunctive
    #: questions (empty: the one path ``relation_path`` from ``entities[0]``)
    branches: tuple[tuple[str, tuple[PathStep, ...]], ...] = field(default=(), compare=False)

    @property
    def gold_branches(self) -> tuple[tuple[str, tuple[PathStep, ...]], ...]:
        """Every gold branch; a single-path question has one."""
        if self.branches:
            return self.branches
        if self.entities and self.relation_path:
            return ((self.entities[0], self.relation_path),)
        return ()

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
    """A user's own questions: JSONL of ``{"question", "answers", "entities"?, "id"?}``, with
    an optional gold relation path so the oracle mode runs on your own graph:
    ``"path": "starred_actors_inv -> directed_by"`` (from the first entity; ``_inv`` / ``~``
    walks an edge backwards), or several branches meeting at the answer (a conjunctive
    question): ``"paths": [{"entity": "Tom Hanks", "path": "starred_actors_inv"},
    {"entity": "1994", "path": "release_year_inv"}]``. A path may also be a list of relation
    names or ``{"relation": ..., "direction": "out" | "in"}`` objects."""
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
            raise GraphFormatError("each line needs a 'question' string", path=str(path),
                                   line=number)
        answers = record.get("answers", record.get("answer", []))
        if answers is None:  # "answers": null -- no gold answers, not a crash
            answers = []
        if isinstance(answers, str):
            answers = [answers]
        entities = record.get("entities", [])
        entities = tuple(str(e) for e in (entities if isinstance(entities, list) else [entities]))
        try:
            branches = _gold_branches(record, entities)
        except (TypeError, ValueError, KeyError) as exc:
            raise GraphFormatError(f"bad gold path: {exc}", path=str(path), line=number) from None
        if branches:
            entities = tuple(dict.fromkeys(entities + tuple(e for e, _ in branches)))
        examples.append(QAExample(
            question=record["question"],
            answers=tuple(str(a) for a in answers),
            entities=entities,
            relation_path=branches[0][1] if branches else (),
            qtype=f"{len(branches)}-branch" if len(branches) > 1 else (
                f"{len(branches[0][1])}-hop" if branches else ""),
            id=str(record.get("id", f"{path.stem}-{number}")),
            branches=branches if len(branches) > 1 else (),
        ))
    return _sample(examples, limit, seed)


def _steps(value: object) -> tuple[PathStep, ...]:
    """A gold path given as ``"r1 -> r2_inv"``, a list of names, or relation/direction objects."""
    if isinstance(value, list) and any(isinstance(v, dict) for v in value):
        steps = tuple(PathStep(str(v["relation"]), v.get("direction", "out")) for v in value)
    elif isinstance(value, (str, list)):
        steps = tuple(parse_relation_path(value))
    else:
        raise TypeError(f"a path is a string or a list, got {type(value).__name__}")
    if not steps:
        raise ValueError("empty path")
    return steps


def _gold_branches(record: dict, entities: tuple[str, ...]
                   ) -> tuple[tuple[str, tuple[PathStep, ...]], ...]:
    """``(entity, steps)`` per gold branch of a JSONL record (``path`` or ``paths``)."""
    if "paths" in record:
        branches = record["paths"]
        if not isinstance(branches, list) or not branches:
            raise ValueError("'paths' must be a non-empty list of {entity, path}")
        return tuple((str(b["entity"]), _steps(b["path"])) for b in branches)
    if "path" in record:
        if not entities:
            raise ValueError("a 'path' starts at the first of 'entities', which is missing")
        return ((entities[0], _steps(record["path"])),)
    return ()
