"""How a database HNSW index's recall depends on the number of neighbours asked for (issue 27).

FalkorDB's vector index searches with a beam of ``max(efRuntime, k)``, so asking for more than
``efRuntime`` nodes finds more of the true nearest. This writes ``--nodes`` random unit vectors
of dimension ``--dim`` (seeded) into a fresh FalkorDB with ``kgrag index-db``'s index options
(cosine, M 16, efConstruction 200, efRuntime 100 by default), then for ``--queries`` of the
vectors asks ``db.idx.vector.queryNodes`` for k = 16, 100, 200, 400, 800, 1600 and reports the
recall@16 of the best 16 returned against exact search (numpy), with the median query time.
Random vectors have no cluster structure: the hardest case for HNSW.

    python benchmarks/db_hnsw_beam.py --nodes 243000 --out benchmarks/results/db_hnsw_beam.json
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:0] = [HERE, os.path.join(os.path.dirname(HERE), "tests"),
                os.path.join(os.path.dirname(HERE), "shared")]

ASKED = (16, 100, 200, 400, 800, 1600)


def main(argv: list[str] | None = None) -> int:
    import numpy as np
    from db_server import FalkorDBServer
    from falkordb import FalkorDB
    from machine_info import machine_info

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--nodes", type=int, default=243_000)
    ap.add_argument("--dim", type=int, default=64)
    ap.add_argument("--queries", type=int, default=30)
    ap.add_argument("--m", type=int, default=16)
    ap.add_argument("--ef-construction", type=int, default=200)
    ap.add_argument("--ef-runtime", type=int, default=100)
    ap.add_argument("--out", default=os.path.join(HERE, "results", "db_hnsw_beam.json"))
    args = ap.parse_args(argv)

    rng = np.random.default_rng(0)
    vectors = rng.standard_normal((args.nodes, args.dim)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    server = FalkorDBServer().start()
    try:
        graph = FalkorDB(host="127.0.0.1", port=server.port).select_graph("beam")
        started = time.perf_counter()
        graph.query(f"CREATE VECTOR INDEX FOR (n:E) ON (n.v) OPTIONS {{dimension: {args.dim}, "
                    f"similarityFunction: 'cosine', M: {args.m}, efConstruction: "
                    f"{args.ef_construction}, efRuntime: {args.ef_runtime}}}")
        for lo in range(0, args.nodes, 5000):
            graph.query("UNWIND $rows AS r CREATE (:E {i: r.i, v: vecf32(r.v)})",
                        {"rows": [{"i": i, "v": vectors[i].tolist()}
                                  for i in range(lo, min(args.nodes, lo + 5000))]})
        build = time.perf_counter() - started
        queries = rng.choice(args.nodes, args.queries, replace=False)
        rows = []
        for asked in ASKED:
            recalls, times = [], []
            for qi in queries:
                q = vectors[qi]
                exact = set(np.argsort(-(vectors @ q), kind="stable")[:16].tolist())
                t0 = time.perf_counter()
                got = graph.query("CALL db.idx.vector.queryNodes('E', 'v', $k, vecf32($q)) "
                                  "YIELD node, score RETURN node.i ORDER BY score LIMIT 16",
                                  {"k": asked, "q": q.tolist()}).result_set
                times.append(time.perf_counter() - t0)
                recalls.append(len(exact & {r[0] for r in got}) / 16)
            rows.append({"asked": asked, "recall_at_16_mean": round(statistics.mean(recalls), 4),
                         "recall_at_16_min": min(recalls),
                         "median_ms": round(1000 * statistics.median(times), 2)})
            print(rows[-1], flush=True)
    finally:
        server.stop()
    report = {"nodes": args.nodes, "dim": args.dim, "queries": args.queries,
              "index": {"M": args.m, "efConstruction": args.ef_construction,
                        "efRuntime": args.ef_runtime, "similarityFunction": "cosine"},
              "build_seconds": round(build, 1), "rows": rows,
              "machine": machine_info(note="real-model evaluations running niced beside it")}
    with open(args.out, "w", encoding="utf-8") as f:
        json.dump(report, f, indent=2)
        f.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
