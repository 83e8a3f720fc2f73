"""Building a second method over the same graph: what does it cost once the first has embedded
the names? (The per-graph shared embedding index, ``kgrag.embed.graph_vectors``.)

Not a test: writes ``benchmarks/results/shared_index_build.json``. Run from the repo root::

    flock /work/bench.lock python benchmarks/shared_index_build.py

MetaQA's KB (43k node names). The on-disk cache is switched off, so the first method pays for
embedding every name; each later method is built in the same process over the same graph with
the same (default) embedder and reuses the vectors and the FAISS index. Every method is made
ready for its first question (linker / scorer indexes built), not just constructed.
"""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "shared"))
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

from machine_info import stamp

from kgrag.embed import configure_cache, default_embedder
from kgrag.graph import read_triples

KB = ROOT.parent / "shared" / "data" / "metaqa" / "kb_reconstructed.txt"


def build_simgrag(kg, emb):
    from kgrag.methods.simgrag import SimGRAG

    return SimGRAG.from_graph(kg, embedder=emb)


def build_ultrag(kg, emb):
    from kgrag.methods.ultrag import UltRAG

    method = UltRAG.from_graph(kg, embedder=emb, executor="symbolic")
    method.leaf_linker.linker.build()
    return method


def build_graphraft(kg, emb):
    from kgrag.methods.graphraft import GraphRAFT

    method = GraphRAFT(kg, embedder=emb)
    method.linker.build()
    return method


def build_byokg(kg, emb):
    from kgrag.methods.byokg import ByoKGRAG

    method = ByoKGRAG(kg, embedder=emb)
    _ = method.scorer
    method.linker.build()
    return method


BUILDERS = {"simgrag": build_simgrag, "ultrag": build_ultrag, "graphraft": build_graphraft,
            "byokg": build_byokg}


def main() -> int:
    configure_cache(enabled=False)  # in-process sharing only: the first build embeds
    kg = read_triples(str(KB))
    emb = default_embedder()
    emb.embed_query("load the model first")  # model loading is not part of any build
    order = sys.argv[1:] or list(BUILDERS)
    rows = []
    for name in order:
        started = time.perf_counter()
        BUILDERS[name](kg, emb)
        rows.append({"method": name, "seconds": round(time.perf_counter() - started, 3)})
        print(json.dumps(rows[-1]), flush=True)
    first = rows[0]["seconds"]
    for row in rows:
        row["fraction_of_first"] = round(row["seconds"] / first, 4)
    out = {"graph": f"MetaQA KB, {kg.num_nodes} nodes, {kg.num_edges} edges", "rows": rows,
           "loadavg_end": os.getloadavg(), "machine": "2 cores shared with other jobs",
           "command": "python benchmarks/shared_index_build.py " + " ".join(sys.argv[1:])}
    (ROOT / "benchmarks/results/shared_index_build.json").write_text(
        json.dumps(stamp(out), indent=2))
    print("| method (in build order) | build s | fraction of the first |")
    print("|---|---:|---:|")
    for row in rows:
        print(f"| {row['method']} | {row['seconds']} | {row['fraction_of_first']:.1%} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
