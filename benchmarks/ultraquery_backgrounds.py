"""UltraQuery's background states, on and off, alternating in one process.

A projection from a small input set computes each entity layer only on the nodes it reaches and
copies the rest from the query relation's background states
(:meth:`kgrag.methods.ultrag.ultraquery.PreparedGraph.backgrounds`). This benchmark prepares the
same graph twice -- with the default budget and with ``background_bytes=0`` (every layer after
the first on every node, the code before the backgrounds) -- fills both graphs' per-relation
caches (two anchor projections per relation type), then alternates the two on the same one-hot
and fuzzy projections, so both see the same machine load. It reports the medians, the largest
difference between the two outputs and the memory the backgrounds take.

    python benchmarks/ultraquery_backgrounds.py --threads 2
    bash benchmarks/as_avx2.sh python benchmarks/ultraquery_backgrounds.py --threads 2
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from machine_info import stamp

from kgrag.graph import read_triples
from kgrag.methods.ultrag.ultraquery import UltraQueryModel

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT.parent / "shared" / "data"
RESULTS = ROOT / "benchmarks" / "results"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--projections", type=int, default=40,
                        help="one-hot and as many fuzzy projections, each run both ways")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", default=str(RESULTS / "ultraquery_backgrounds_metaqa.json"))
    args = parser.parse_args(argv)
    if args.projections < 1 or args.threads < 1:
        parser.error("--projections and --threads must be at least 1")
    import torch

    torch.set_num_threads(args.threads)
    kg = read_triples(DATA / "metaqa" / "kb_reconstructed.txt", sep="|")
    n, types = kg.num_nodes, 2 * kg.num_relations
    model = UltraQueryModel()
    graphs = {"backgrounds": model.prepare(kg.heads, kg.rels, kg.tails, n, kg.num_relations),
              "none": model.prepare(kg.heads, kg.rels, kg.tails, n, kg.num_relations,
                                    background_bytes=0)}
    rng = np.random.default_rng(args.seed)

    def one_hot() -> np.ndarray:
        x = np.zeros((1, n), np.float32)
        x[0, rng.integers(n)] = 1.0
        return x

    started = time.perf_counter()
    for graph in graphs.values():  # relation embeddings, and the backgrounds (second use)
        for relation in range(types):
            for _ in range(2):
                model.project(graph, one_hot(), [relation])
    fill_s = time.perf_counter() - started
    times: dict[str, dict[str, list[float]]] = {k: {"one-hot": [], "fuzzy": []} for k in graphs}
    largest = 0.0
    for i in range(args.projections):
        relation = int(rng.integers(types))
        inputs = {"one-hot": one_hot(), "fuzzy": rng.random((1, n)).astype(np.float32)}
        for kind, x in inputs.items():
            outs = {}
            for name in (list(graphs) if i % 2 else list(graphs)[::-1]):
                start = time.perf_counter()
                outs[name] = model.project(graphs[name], x, [relation])
                times[name][kind].append(1000 * (time.perf_counter() - start))
            largest = max(largest, float((outs["backgrounds"] - outs["none"]).abs().max()))
    report = {
        "benchmark": "ultraquery_backgrounds", "graph": "MetaQA KB", "nodes": n,
        "edges": kg.num_edges, "relation_types": types, "threads": args.threads,
        "projections": args.projections, "fill_seconds": round(fill_s, 1),
        "background_mb": round(len(graphs["backgrounds"]._background)
                               * graphs["backgrounds"].background_size / 2**20),
        "median_ms": {name: {kind: round(statistics.median(v), 1) for kind, v in per.items()}
                      for name, per in times.items()},
        "p90_ms": {name: {kind: round(float(np.percentile(v, 90)), 1) for kind, v in per.items()}
                   for name, per in times.items()},
        "max_abs_difference": largest,
        "command": "python benchmarks/ultraquery_backgrounds.py " + " ".join(
            argv if argv is not None else sys.argv[1:]),
    }
    stamp(report)
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(report, indent=1) + "\n")
    print(json.dumps({k: v for k, v in report.items() if k != "machine"}, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
