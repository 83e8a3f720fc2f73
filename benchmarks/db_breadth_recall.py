"""SimGRAG's database search beam against recall, on a graph already loaded by
``db_vectors_scale.py`` (issue 27): for each ``--breadths`` value, recall@16 of what SimGRAG
keeps from the database's vector index (its best 16 x OVERSAMPLE of a ``breadth``-wide HNSW
search, re-ranked exactly: ``db_vectors_scale.kept_recall``) against exact search over every
node's vector, and the median time of one index query.

Queries: the benchmark's ``--questions`` seeds plus ``--extra`` random node names. Vectors:
the benchmark's hash embedder (random unit vectors, the hardest case for HNSW).

    python benchmarks/db_breadth_recall.py --edges 10000000 --port P \\
        --breadths 2048,4096,8192,16384,32768 --out benchmarks/results/db_breadth_recall_10M.json
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import db_vectors_scale as scale  # noqa: E402
from machine_info import stamp  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--edges", type=int, default=10_000_000)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--dim", type=int, default=64)
    ap.add_argument("--questions", type=int, default=10)
    ap.add_argument("--extra", type=int, default=20)
    ap.add_argument("--port", type=int, required=True, help="the FalkorDB holding the graph")
    ap.add_argument("--breadths", default="2048,4096,8192,16384,32768")
    ap.add_argument("--out", required=True)
    args = ap.parse_args(argv)
    os.environ["KGRAG_HASH_DIM"] = str(args.dim)
    import numpy as np
    from hash_embedder import HashUnitEmbedder

    from kgrag.graph.cypher.vectors import node_vector_index
    from kgrag.graph.io import iter_triples

    tsv = os.path.join(scale.CACHE_DIR, f"dbvec_{args.edges}_{args.seed}.tsv")
    names = sorted({x for h, _, t in iter_triples(tsv, sep="\t") for x in (h, t)})
    emb = HashUnitEmbedder(args.dim)
    vectors = np.asarray(emb.embed_documents(names), np.float32)
    row = {n: i for i, n in enumerate(names)}
    rng = random.Random(args.seed + 1)
    queries = [q[0] for q in scale._questions(tsv, args.questions, args.seed)]
    queries += [names[rng.randrange(len(names))] for _ in range(args.extra)]
    store = scale._open(args.port)
    index = node_vector_index(store, emb)
    results = []
    for breadth in (int(b) for b in args.breadths.split(",")):
        recalls, seconds = [], []
        for name in queries:
            q = np.asarray(emb.embed_query(name), np.float32)
            recall, took = scale.kept_recall(store, index.index, vectors, row, q, breadth)
            recalls.append(recall)
            seconds.append(took)
        results.append({"breadth": breadth, "recall_at_16_mean": round(statistics.mean(recalls), 4),
                        "recall_at_16_min": min(recalls),
                        "query_seconds_median": round(statistics.median(seconds), 3)})
        print(json.dumps(results[-1]), flush=True)
    store.close()
    report = {"edges": args.edges, "nodes": len(names), "dim": args.dim,
              "queries": len(queries), "results": results,
              "command": "python benchmarks/db_breadth_recall.py " + " ".join(argv or sys.argv[1:])}
    stamp(report)
    with open(args.out, "w", encoding="utf-8") as f:
        json.dump(report, f, indent=2)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
