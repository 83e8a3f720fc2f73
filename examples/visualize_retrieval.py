"""See what was retrieved: draw one retrieval as a standalone HTML page and as a PNG.

``kgrag.viz.render_html(result, path)`` writes a self-contained page (inline SVG, no scripts or
CDN, opens offline) with the drawing and the ranked items as text; ``render_png`` draws the same
with networkx + matplotlib. Question entities are orange, retrieved nodes blue with their rank,
connecting nodes grey; retrieved edges are solid, connecting paths dashed (``graph=`` lets the
renderer tie entity results to the question entities by shortest paths). Run::

    python examples/visualize_retrieval.py [OUT_DIR]

It draws a SimGRAG retrieval (matched subgraphs) and an UltRAG one (a fuzzy set of entities),
both without an LLM, into OUT_DIR (default ``retrieval_views/``). From the command line::

    kgrag ask examples/data/movies.tsv "Where was the director of Tokyo Godfathers born?" \\
        --method byokg --show byokg.png
"""

from __future__ import annotations

import sys
from pathlib import Path

from kgrag.embed import default_embedder
from kgrag.graph import read_triples
from kgrag.methods.simgrag import SimGRAG
from kgrag.methods.ultrag import UltRAG
from kgrag.viz import render_html, render_png

DATA = Path(__file__).resolve().parent / "data" / "movies.tsv"


def main(out_dir: str = "retrieval_views", embedder=None) -> list[Path]:
    kg = read_triples(DATA)
    out = Path(out_dir)
    # SimGRAG with a pattern written by hand (an LLM writes it from the question otherwise)
    simgrag = SimGRAG(kg, embedder=embedder or default_embedder(), top_k=3)
    subgraphs = simgrag.retrieve_pattern(
        [("UNKNOWN film 1", "directed by", "Satoshi Kon"), ("UNKNOWN film 1", "genre", "Thriller")],
        "Which thriller did Satoshi Kon direct?")
    # UltRAG with a logical query written by hand (an LLM writes it from the question otherwise)
    entities = UltRAG(kg, linking="exact").retrieve_query(
        'AND("Animation" -> has_genre_inv, "Japan" -> country_of_inv) -> directed_by',
        "Who directed the Japanese animated films?")
    written = []
    for name, result in (("simgrag", subgraphs), ("ultrag", entities)):
        written.append(render_html(result, out / f"{name}.html", graph=kg))
        written.append(render_png(result, out / f"{name}.png", graph=kg))
    for path in written:
        print(f"wrote {path} ({path.stat().st_size} bytes)")
    return written


if __name__ == "__main__":
    main(*sys.argv[1:2])
