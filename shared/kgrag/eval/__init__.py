"""Evaluation: dataset loaders, metrics and the runner behind ``kgrag eval``."""

from kgrag.eval.corpora import TextQADataset, load_hotpotqa, load_musique
from kgrag.eval.datasets import (
    QAExample,
    load_jsonl,
    load_metaqa,
    load_pathquestion,
    metaqa_relation_path,
    relation_path_text,
)
from kgrag.eval.runner import DATASETS, METHOD_DATASETS, evaluate, user_dataset

__all__ = [
    "DATASETS",
    "METHOD_DATASETS",
    "QAExample",
    "TextQADataset",
    "evaluate",
    "load_hotpotqa",
    "load_jsonl",
    "load_metaqa",
    "load_musique",
    "load_pathquestion",
    "metaqa_relation_path",
    "relation_path_text",
    "user_dataset",
]
