"""Fine-tuning data for GraphRAFT, synthesised from (question, gold answers) pairs alone.

For each question (paper §4.1, Fig. 2): link its entities, enumerate every candidate query, count
each candidate's gold hits and results, rank by (most hits, fewest results), and keep the best as
the label when it reaches recall 1 and precision >= 0.1 (the reference code's rule); otherwise the
question is dropped. Two JSONL files come out, in chat format:

* the **query selector** (L1): ``{"messages": [user: question, assistant: best query text]}``;
* the **answer model** (L2): user = the Fig. 4 prompt over a context built from 5 candidate
  queries sampled with ``int(N * u ** (1 / alpha))``, alpha = 0.1 (strongly favouring top ranks,
  RAFT-style noise; reference code), assistant = the gold names *that are in that context*,
  joined by ``|``. Restricting the target to retrieved gold names (the reference code uses all
  gold names) avoids teaching the model to name nodes it was never shown.

Output files are written line by line and flushed, so an interrupted export leaves valid JSONL.
"""

from __future__ import annotations

import json
import random
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable, Iterator, Sequence

from kgrag.methods.graphraft.enumeration import Candidate, best_label, rank_for_training
from kgrag.methods.graphraft.prompts import answer_prompt


@dataclass(frozen=True)
class QAPair:
    """A training question with its gold answer names and, optionally, known topic entities."""

    question: str
    answers: tuple[str, ...]
    entities: tuple[str, ...] = ()


@dataclass
class LabelledQuestion:
    qa: QAPair
    entities: list[str]
    ranked: list[Candidate]
    label: Candidate | None


def read_qa_pairs(path: str | Path, *, limit: int | None = None, seed: int = 0) -> list[QAPair]:
    """Training questions from a file: JSONL or MetaQA's format, detected from the first line.

    * JSONL: one ``{"question": ..., "answers": [...], "entities": [...]?}`` object per line
      (:func:`kgrag.questions.load_jsonl`);
    * MetaQA: ``question with [topic entity]\tanswer1|answer2`` per line; the bracketed names
      become the pair's entities and the brackets are removed from the question.

    ``limit`` takes a seeded random sample (file order kept). Raises
    :class:`~kgrag.errors.GraphFormatError` naming the line of a malformed record.
    """
    import re

    from kgrag.errors import GraphFormatError
    from kgrag.questions import load_jsonl

    path = Path(path)
    text = path.read_text(encoding="utf-8")
    first = next((line.strip() for line in text.splitlines() if line.strip()), "")
    if first.startswith("{"):
        return [QAPair(ex.question, ex.answers, ex.entities)
                for ex in load_jsonl(path, limit=limit, seed=seed)]
    pairs = []
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        question, sep, answers = line.partition("\t")
        if not sep or not answers.strip():
            raise GraphFormatError("expected 'question\\tanswer1|answer2' (MetaQA format) or a "
                                   "JSON object", path=str(path), line=number)
        topics = tuple(re.findall(r"\[([^\]]+)\]", question))
        pairs.append(QAPair(re.sub(r"\[([^\]]+)\]", r"\1", question).strip(),
                            tuple(a.strip() for a in answers.split("|") if a.strip()), topics))
    if limit is not None and limit < len(pairs):
        keep = sorted(random.Random(seed).sample(range(len(pairs)), limit))
        pairs = [pairs[i] for i in keep]
    return pairs


def sample_ranks(n: int, k: int = 5, alpha: float = 0.1,
                 rng: random.Random | None = None) -> list[int]:
    """``k`` distinct ranks in ``[0, n)`` drawn as ``int(n * u ** (1/alpha))`` (top-heavy)."""
    rng = rng or random.Random(0)
    k = min(k, n)
    picked: list[int] = []
    while len(picked) < k:
        rank = min(int(n * rng.random() ** (1.0 / alpha)), n - 1)
        if rank not in picked:
            picked.append(rank)
    return picked


def label_questions(method: "object", pairs: Iterable[QAPair], *, min_recall: float = 1.0,
                    min_precision: float = 0.1,
                    progress: bool = True) -> Iterator[LabelledQuestion]:
    """Label every question with its best candidate query (``None`` when it is dropped).

    ``method`` is a :class:`~kgrag.methods.graphraft.pipeline.GraphRAFT`; its entity extraction
    and linking are used unless a pair gives its topic entities.
    """
    from tqdm.auto import tqdm

    for qa in tqdm(list(pairs), desc="labelling questions", disable=not progress):
        if qa.entities:
            entities = method.link(list(qa.entities))  # type: ignore[attr-defined]
        else:
            entities = method.link(method.extract_entities(qa.question))  # type: ignore[attr-defined]
        cands = method.backend.enumerate(  # type: ignore[attr-defined]
            entities, method.config.families, gold=qa.answers)  # type: ignore[attr-defined]
        label = best_label(cands, len(set(qa.answers)), min_recall=min_recall,
                           min_precision=min_precision)
        yield LabelledQuestion(qa, entities, rank_for_training(cands), label)


def export_training_data(
    method: "object",
    pairs: Sequence[QAPair],
    out_dir: str | Path,
    *,
    queries_per_context: int = 5,
    alpha: float = 0.1,
    seed: int = 0,
    progress: bool = True,
) -> dict[str, int]:
    """Write ``selector.jsonl`` and ``answer.jsonl`` into ``out_dir``; return counts."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    rng = random.Random(seed)
    counts = {"questions": 0, "kept": 0, "dropped": 0, "answer_records": 0}
    with open(out / "selector.jsonl", "w", encoding="utf-8") as sel, \
            open(out / "answer.jsonl", "w", encoding="utf-8") as ans:
        for item in label_questions(method, pairs, progress=progress):
            counts["questions"] += 1
            if item.label is None:
                counts["dropped"] += 1
                continue
            counts["kept"] += 1
            sel.write(json.dumps({"messages": [
                {"role": "user", "content": item.qa.question},
                {"role": "assistant", "content": item.label.text},
            ]}, ensure_ascii=False) + "\n")
            sel.flush()
            ranks = sample_ranks(len(item.ranked), queries_per_context, alpha, rng)
            chosen = [item.ranked[r] for r in sorted(ranks)]
            nodes = method.assemble_context(item.qa.question, chosen)  # type: ignore[attr-defined]
            blocks = [f"pattern: {' ; '.join(n.patterns)}\nname: {n.name}" for n in nodes]
            retrieved = {n.name for n in nodes}
            target = [a for a in dict.fromkeys(item.qa.answers) if a in retrieved]
            if not target:
                continue
            ans.write(json.dumps({"messages": [
                {"role": "user", "content": answer_prompt(item.qa.question, blocks)},
                {"role": "assistant", "content": "|".join(target)},
            ]}, ensure_ascii=False) + "\n")
            ans.flush()
            counts["answer_records"] += 1
    (out / "summary.json").write_text(json.dumps(counts, indent=2), encoding="utf-8")
    return counts
