"""See what a method retrieved: one :class:`~kgrag.context.types.RetrievalResult` drawn as a
standalone HTML page (inline SVG, works offline) or a PNG (networkx + matplotlib).

>>> import os, tempfile
>>> from kgrag.graph import KnowledgeGraph
>>> from kgrag.methods.ultrag import UltRAG
>>> from kgrag.viz import render_html, render_png
>>> kg = KnowledgeGraph.from_triples([("Tokyo Godfathers", "directed_by", "Satoshi Kon"),
...                                   ("Satoshi Kon", "born_in", "Sapporo")])
>>> query = '"Tokyo Godfathers" -> directed_by -> born_in'  # what the LLM would write
>>> method = UltRAG.from_graph(kg, llm=lambda prompt: query, linking="exact",
...                            executor="symbolic")
>>> result = method.retrieve("Where was the director of Tokyo Godfathers born?")
>>> [entity.name for entity in result.items]
['Sapporo']
>>> tmp = tempfile.TemporaryDirectory()
>>> render_html(result, os.path.join(tmp.name, "retrieval.html"), graph=kg).name
'retrieval.html'
>>> render_png(result, os.path.join(tmp.name, "retrieval.png"), graph=kg).name
'retrieval.png'
>>> tmp.cleanup()

``graph`` is optional: with it, entities retrieved without edges (ByoKG-RAG's LLM-free
candidates, GraphRAFT's nodes, UltRAG's fuzzy set) are tied to the question entities by
shortest paths, drawn dashed. See :mod:`kgrag.viz.view` for what is drawn and why.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path as FilePath
from typing import Any

from kgrag.context.types import RetrievalResult
from kgrag.viz.view import RetrievalView, build_view, question_entities_of


def render_html(result: RetrievalResult, path: str | FilePath, *, graph: Any = None,
                max_items: int = 15, question_entities: Sequence[str] | None = None
                ) -> FilePath:
    """Write the retrieval of ``result`` as a self-contained HTML page; returns the path."""
    from kgrag.viz.html import write_html

    view = build_view(result, graph, max_items=max_items, question_entities=question_entities)
    return write_html(result, view, path)


def render_png(result: RetrievalResult, path: str | FilePath, *, graph: Any = None,
               max_items: int = 15, question_entities: Sequence[str] | None = None,
               dpi: int = 110) -> FilePath:
    """Write the retrieval of ``result`` as a PNG image; returns the path."""
    try:
        import matplotlib  # noqa: F401
    except ImportError as exc:
        raise ImportError("drawing a PNG needs matplotlib, which is not installed: pip install "
                          "'kgrag[viz]' (an .html page needs nothing)") from exc
    from kgrag.viz.png import write_png

    view = build_view(result, graph, max_items=max_items, question_entities=question_entities)
    return write_png(result, view, path, dpi=dpi)


def render(result: RetrievalResult, path: str | FilePath, **options: Any) -> FilePath:
    """:func:`render_html` or :func:`render_png`, chosen by the file suffix."""
    suffix = FilePath(path).suffix.lower()
    if suffix in (".html", ".htm"):
        return render_html(result, path, **options)
    if suffix == ".png":
        return render_png(result, path, **options)
    raise ValueError(f"cannot render to {path!s}: use a .html or .png file name")


__all__ = ["RetrievalView", "build_view", "question_entities_of", "render", "render_html",
           "render_png"]
