"""Opening a graph named by a path: a triples file or a directory written by ``save``."""

from __future__ import annotations

import os


from kgrag.graph.memory import KnowledgeGraph

__all__ = ["open_graph"]


def open_graph(path: str, *, sep: str | None = None, on_error: str = "raise") -> KnowledgeGraph:
    """A :class:`~kgrag.graph.memory.KnowledgeGraph` from a triples file or a saved directory.

    A directory is read with :meth:`KnowledgeGraph.load` (``sep``/``on_error`` do not apply);
    anything else as a delimited triples file with :meth:`KnowledgeGraph.from_csv`.
    """
    if os.path.isdir(path):
        return KnowledgeGraph.load(path)
    if not os.path.exists(path):
        raise FileNotFoundError(f"no graph at {path} (expected a triples file or a saved graph "
                                "directory)")
    return KnowledgeGraph.from_csv(path, sep=sep, on_error=on_error)


