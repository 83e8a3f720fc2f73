"""Training pairs for each method's LLM step, and the held-out split that keeps test questions out.

A pair is ``(prompt, target)``: ``prompt`` is the user turn (rendered with the base model's chat
template and the method's :data:`SYSTEM` message, see :func:`kgrag.finetune.model.prompt_template`),
``target`` what the model must write. The compact prompts are the same at training and at
inference (:func:`compact_prompt` is the one function both use; each method's prompt version is
in :data:`PROMPT_VERSIONS`, recorded in every adapter's manifest). :func:`method_prompts` is the
``prompts=`` override that makes UltRAG or SimGRAG send a fine-tuned writer that same prompt.

* **GraphRAFT** (L1, the paper's data, §4.1): prompt = the question; target = the best
  enumerated candidate query by (most gold hits, fewest results) when it reaches recall 1 and
  precision >= 0.1 (:func:`kgrag.methods.graphraft.training.label_questions`); other questions
  are dropped. The candidate is written in a compact, one-to-one form of its Cypher
  (:func:`candidate_text`: ``"Paprika" - directed_by - has_genre``, ~15 tokens instead of ~40),
  which is what the selector then scores: on 2 shared CPU cores every token counts, and the
  Cypher around the names and relations is the same for every candidate of a family.
* **UltRAG**: target = the oracle query with the topic entity by name,
  ``"Paprika" -> directed_by`` (:func:`kgrag.eval.datasets.relation_path_text`), which UltRAG's
  parser reads.
* **SimGRAG**: target = the oracle pattern (:func:`kgrag.eval.oracles.simgrag_pattern`) as the
  compact JSON object SimGRAG's own parser reads, ``{"triples": [["Paprika", "director",
  "UNKNOWN person 1"]]}`` (:func:`format_pattern` / :func:`parse_pattern`; prompt version 2:
  version 1 wrote one ``head | relation | tail`` line per triple, which SimGRAG does not read).

**Split.** The datasets in ``../shared/data`` have no training files (MetaQA's ``qa_train.txt``
and PathQuestion's split are not in the snapshot), so the training questions of a dataset are
its question file *minus* the evaluation sample the harness draws (``limit`` questions, seed
``seed``), minus every question whose text equals a held-out one. :func:`training_examples`
asserts the two sets are disjoint, and :func:`assert_disjoint` is checked again before training.
"""

from __future__ import annotations

import json
import random
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Iterable, Sequence

from kgrag.eval.datasets import QAExample, relation_path_text
from kgrag.finetune import METHODS

#: Per method, bumped whenever its compact prompt or target format changes.
PROMPT_VERSIONS = {"graphraft": 1, "ultrag": 1, "simgrag": 2}
#: The system message of each method's compact prompt.
SYSTEM = {
    "graphraft": "Write the Cypher query that answers the question.",
    "ultrag": "Write the graph query that answers the question.",
    "simgrag": "Write the question as a graph pattern of triples.",
}
#: The harness's evaluation sample: the held-out questions of every dataset.
EVAL_LIMIT = 300
EVAL_SEED = 0


@dataclass(frozen=True)
class TrainingPair:
    prompt: str
    target: str
    source: str = ""  # "<dataset>:<question id>"


def compact_prompt(method: str, question: str) -> str:
    """The user turn of ``method``'s compact prompt (the question itself for every method;
    the task is in :data:`SYSTEM`)."""
    if method not in SYSTEM:
        raise ValueError(f"unknown method {method!r}; expected one of {', '.join(METHODS)}")
    return question.strip()


def method_prompts(method: str) -> dict[str, str]:
    """The ``prompts=`` override that sends a method's LLM step the compact prompt a writer
    fine-tuned for it was trained on (system message :data:`SYSTEM`, the question as the user
    turn): ``UltRAG(kg, llm=tuned, prompts=method_prompts("ultrag"))``. GraphRAFT's fine-tuned
    selector scores candidates instead of writing (``ScoredChoiceSelector``), so it has none."""
    if method == "ultrag":
        return {"query_system": SYSTEM["ultrag"], "query": "{question}"}
    if method == "simgrag":
        return {"pattern_system": SYSTEM["simgrag"], "pattern": "{question}"}
    if method == "graphraft":
        raise ValueError("GraphRAFT's fine-tuned selector scores candidate queries; use "
                         "kgrag.finetune.use.finetuned_selector(adapter), not prompts")
    raise ValueError(f"unknown method {method!r}; expected one of {', '.join(METHODS)}")


# ---------------------------------------------------------------- split
def _norm(question: str) -> str:
    return " ".join(question.casefold().split())


def heldout_examples(dataset: str, data_root: Path, *, limit: int = EVAL_LIMIT,
                     seed: int = EVAL_SEED) -> list[QAExample]:
    """The evaluation sample of a harness dataset (what ``kgrag eval`` and the benchmark test)."""
    from kgrag.eval.runner import DATASETS

    return DATASETS[dataset].load_examples(data_root, limit, seed)


def training_examples(dataset: str, data_root: Path, *, heldout_limit: int = EVAL_LIMIT,
                      heldout_seed: int = EVAL_SEED, limit: int | None = None, seed: int = 0
                      ) -> list[QAExample]:
    """Questions of a harness dataset for training: every question except the held-out sample
    (and except any question whose text equals a held-out one); ``limit`` = a seeded sample."""
    from kgrag.eval.runner import DATASETS

    everything = DATASETS[dataset].load_examples(data_root, None, 0)
    held = heldout_examples(dataset, data_root, limit=heldout_limit, seed=heldout_seed)
    held_ids = {ex.id for ex in held}
    held_text = {_norm(ex.question) for ex in held}
    train = [ex for ex in everything
             if ex.id not in held_ids and _norm(ex.question) not in held_text]
    assert_disjoint(train, held)
    if limit is not None and limit < len(train):
        keep = sorted(random.Random(seed).sample(range(len(train)), limit))
        train = [train[i] for i in keep]
    return train


def assert_disjoint(train: Iterable[QAExample], heldout: Iterable[QAExample]) -> None:
    """Raise AssertionError if a held-out question (by id or by text) is among ``train``."""
    held = list(heldout)
    ids = {ex.id for ex in held}
    texts = {_norm(ex.question) for ex in held}
    leaked = [ex.id for ex in train if ex.id in ids or _norm(ex.question) in texts]
    if leaked:
        raise AssertionError(f"{len(leaked)} held-out questions in the training data, "
                             f"e.g. {leaked[:3]}")


# ---------------------------------------------------------------- targets
def format_pattern(triples: Sequence[Sequence[str]]) -> str:
    """A SimGRAG pattern as the compact JSON object SimGRAG's parser reads."""
    return json.dumps({"triples": [[str(x).strip() for x in t] for t in triples]},
                      ensure_ascii=False)


def parse_pattern(text: str) -> list[tuple[str, str, str]]:
    """The triples of a written pattern, read by SimGRAG's own parser (raises
    :class:`~kgrag.errors.LLMOutputError` when there is no pattern)."""
    from kgrag.methods.simgrag.pattern import parse_pattern_reply

    pattern = parse_pattern_reply(text, max_unknown_nodes=None, max_unknown_relations=None)
    return [(str(h), str(r), str(t)) for h, r, t in pattern.triples]


def candidate_text(pattern: Any) -> str:
    """A GraphRAFT candidate's compact text: the source name (JSON-quoted), its relations and,
    for a 2path pattern, the second name, joined by `` - ``. One text per pattern: the family
    follows from the number of relations and a final quoted name.

    >>> from kgrag.methods.graphraft.patterns import PathPattern
    >>> candidate_text(PathPattern("2path", "Tom", ("starred_actors", "directed_by"), "Ann"))
    '"Tom" - starred_actors - directed_by - "Ann"'
    """
    parts = [json.dumps(pattern.source, ensure_ascii=False), *pattern.relations]
    if pattern.target is not None:
        parts.append(json.dumps(pattern.target, ensure_ascii=False))
    return " - ".join(parts)


def ultrag_target(example: QAExample) -> str:
    """``"Paprika" -> directed_by``: the gold path from the topic entity, by name."""
    name = example.entities[0].replace('"', "'")
    return f'"{name}" -> {relation_path_text(example.relation_path)}'


def graphraft_pairs(method: Any, examples: Sequence[QAExample], dataset: str, *,
                    progress: bool = True) -> tuple[list[TrainingPair], int]:
    """GraphRAFT L1 pairs (``method``: a GraphRAFT over the dataset's graph); returns the pairs
    and the number of questions dropped by the label filter."""
    from kgrag.methods.graphraft.training import QAPair, label_questions

    qa = [QAPair(ex.question, ex.answers, ex.entities[:1]) for ex in examples]
    pairs, dropped = [], 0
    for ex, item in zip(examples, label_questions(method, qa, progress=progress)):
        if item.label is None:
            dropped += 1
            continue
        pairs.append(TrainingPair(compact_prompt("graphraft", ex.question),
                                  candidate_text(item.label.pattern), f"{dataset}:{ex.id}"))
    return pairs, dropped


def oracle_pairs(method_name: str, examples: Sequence[QAExample], dataset: str,
                 relation_labels: Any = None) -> list[TrainingPair]:
    """UltRAG / SimGRAG pairs from the gold paths (the oracle's output for the LLM step)."""
    from kgrag.eval.oracles import simgrag_pattern

    pairs = []
    for ex in examples:
        if not ex.entities or not ex.relation_path or len(ex.gold_branches) > 1:
            continue
        if method_name == "ultrag":
            target = ultrag_target(ex)
        elif method_name == "simgrag":
            target = format_pattern(simgrag_pattern(ex, relation_labels)[0])
        else:
            raise ValueError(f"no oracle pairs for {method_name!r}")
        pairs.append(TrainingPair(compact_prompt(method_name, ex.question), target,
                                  f"{dataset}:{ex.id}"))
    return pairs


def write_pairs(pairs: Iterable[TrainingPair], path: str | Path) -> None:
    with open(path, "w", encoding="utf-8") as handle:
        for pair in pairs:
            handle.write(json.dumps(asdict(pair), ensure_ascii=False) + "\n")


def read_pairs(path: str | Path) -> list[TrainingPair]:
    pairs = []
    with open(path, encoding="utf-8") as handle:
        for number, line in enumerate(handle, start=1):
            if not line.strip():
                continue
            record = json.loads(line)
            if not isinstance(record, dict) or not isinstance(record.get("prompt"), str) \
                    or not isinstance(record.get("target"), str):
                raise ValueError(f"{path}:{number}: expected {{'prompt': str, 'target': str}}")
            pairs.append(TrainingPair(record["prompt"], record["target"],
                                      str(record.get("source", ""))))
    return pairs
