"""Opening a graph named by a path: a triples file or a directory written by ``save_graph``."""

from __future__ import annotations

import os
from collections.abc import Sequence

from kgrag.graph.conversions import read_triples
from kgrag.graph.memory import KnowledgeGraph
from kgrag.graph.storage import load_graph

__all__ = ["open_graph"]


def open_graph(path: str, *, sep: str | None = None, on_error: str = "raise",
               relation_labels: str | None = None,
               columns: Sequence[int | str] | None = None) -> KnowledgeGraph:
    """A :class:`~kgrag.graph.memory.KnowledgeGraph` from a triples file or a saved directory.

    A directory is read with :func:`~kgrag.graph.storage.load_graph` (``sep``/``on_error`` do
    not apply); anything else as a delimited triples file with
    :func:`~kgrag.graph.conversions.read_triples`
    (``columns``: the head, relation and tail columns, as indices or header names).
    ``relation_labels``: a label file (:func:`kgrag.graph.io.read_relation_labels`) added to
    the graph's labels.
    """
    if os.path.isdir(path):
        kg = load_graph(path)
    elif not os.path.exists(path):
        raise FileNotFoundError(f"no graph at {path} (expected a triples file or a saved graph "
                                "directory)")
    else:
        kg = read_triples(path, sep=sep, on_error=on_error, columns=columns)
    if relation_labels:
        from kgrag.errors import UnknownRelationError
        from kgrag.graph.io import read_relation_labels

        for name, labels in read_relation_labels(relation_labels).items():
            if name not in kg.relation_index:
                raise UnknownRelationError(f"{relation_labels}: label given for unknown "
                                           f"relation {name!r}")
            kg.relation_labels[name] = labels
    return kg


