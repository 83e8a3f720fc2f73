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

__all__ = [
    "QAExample",
    "TextQADataset",
    "load_hotpotqa",
    "load_jsonl",
    "load_metaqa",
    "load_musique",
    "load_pathquestion",
    "metaqa_relation_path",
    "relation_path_text",
]
