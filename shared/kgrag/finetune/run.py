"""``kgrag finetune`` as a function: training pairs from datasets or a QA file, then LoRA.

:func:`build_training_pairs` turns ``--train`` sources into pairs for one method: a harness
dataset name (``metaqa-1hop``, ``metaqa-2hop``, ``pq-2h`` ...: its questions minus the held-out
evaluation sample, :func:`kgrag.finetune.pairs.training_examples`) or a QA JSONL file with gold
answers (and gold ``path`` for UltRAG / SimGRAG) over a graph given with ``graph``.
:func:`finetune` loads the base, trains (:func:`kgrag.finetune.train.train_lora`) and writes
the adapter folder with its manifest.
"""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any, Sequence

from kgrag.errors import ConfigurationError
from kgrag.finetune.pairs import (
    METHODS,
    SYSTEM,
    TrainingPair,
    assert_disjoint,
    graphraft_pairs,
    oracle_pairs,
    training_examples,
)


def _is_dataset(name: str) -> bool:
    from kgrag.eval.runner import DATASETS

    return name in DATASETS and DATASETS[name].kind == "kg"


def build_training_pairs(method: str, sources: Sequence[str], *, data_root: Path | None = None,
                         graph: str | None = None, heldout: str | None = None,
                         limit: int | None = None, seed: int = 0, progress: bool = True
                         ) -> tuple[list[TrainingPair], dict[str, Any]]:
    """Pairs for ``method`` from every source (``limit`` questions per source, seeded) and a
    summary per source (questions, pairs, dropped). The pairs are shuffled (seeded) across
    sources. ``heldout``: a QA file whose questions must not be among a file source's."""
    from kgrag.eval.datasets import load_jsonl
    from kgrag.eval.runner import DATASETS, default_data_root

    if method not in METHODS:
        raise ConfigurationError(f"--method must be one of {', '.join(METHODS)}")
    pairs: list[TrainingPair] = []
    summary: dict[str, Any] = {}
    for source in sources:
        if _is_dataset(source):
            root = data_root or default_data_root()
            examples = training_examples(source, root, limit=limit, seed=seed)
            kg = DATASETS[source].load_resource(root)
        elif Path(source).is_file():
            if graph is None:
                raise ConfigurationError(f"training on the file {source} needs --graph")
            examples = load_jsonl(source)
            if heldout:
                assert_disjoint(examples, load_jsonl(heldout))
            if limit is not None and limit < len(examples):
                keep = sorted(random.Random(seed).sample(range(len(examples)), limit))
                examples = [examples[i] for i in keep]
            from kgrag.graph.files import open_graph

            kg = open_graph(graph)
        else:
            names = ", ".join(n for n in DATASETS if DATASETS[n].kind == "kg")
            raise ConfigurationError(
                f"--train {source!r} is neither a dataset ({names}) nor a file")
        if method == "graphraft":
            from kgrag.methods.graphraft.pipeline import GraphRAFT

            made, dropped = graphraft_pairs(GraphRAFT(kg), examples, source, progress=progress)
        else:
            made = oracle_pairs(method, examples, source,
                                getattr(kg, "relation_labels", None))
            dropped = len(examples) - len(made)
        summary[source] = {"questions": len(examples), "pairs": len(made), "dropped": dropped}
        pairs.extend(made)
    random.Random(seed).shuffle(pairs)
    return pairs, summary


def finetune(method: str, base: str, pairs: Sequence[TrainingPair], out_dir: str | Path, *,
             config: Any = None, sources: dict[str, Any] | None = None, progress: bool = True
             ) -> Any:
    """Train ``base`` (``local:NAME``, folder or GGUF) on ``pairs``; returns the TrainReport."""
    from kgrag.finetune.model import load_base, prompt_template
    from kgrag.finetune.train import train_lora

    model, tokenizer = load_base(base)
    template = prompt_template(tokenizer, SYSTEM[method])
    return train_lora(model, tokenizer, pairs, out_dir, template=template, config=config,
                      progress=progress,
                      manifest={"base": base, "method": method, "system": SYSTEM[method],
                                "data": {"sources": sources or {}}})
