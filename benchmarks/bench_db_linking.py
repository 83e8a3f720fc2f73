"""Entity linking on a database graph: the database's full-text index vs the local index.

MetaQA's KB (``../shared/data/metaqa/kb_reconstructed.txt``, 43k entities) is loaded into a
throw-away FalkorDB server (``tests/db_server.py``) with a full-text index on ``Entity.name``.
Measured, one run:

* **setup** -- local: stream every name out + build the fuzzy index (what
  ``linker_for_store(..., use_index=False)`` does); database: ``linker_for_store`` detecting the
  index (no names leave the server);
* **per mention** -- median / p95 milliseconds of ``linker.link(mention, top_m=3,
  mode="fuzzy")`` on sampled mentions (entity names, lower-cased, with the last character of
  the longest word removed: "tokyo godfather"), and how often each linker ranks the
  original entity first.

    python benchmarks/bench_db_linking.py --mentions 300 --out
    benchmarks/results/db_linking_metaqa.json
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, os.path.join(ROOT, "tests"))

from machine_info import stamp

from kgrag import KnowledgeGraph
from kgrag.graph import to_falkordb
from kgrag.linking.database import linker_for_store

KB = os.path.join(ROOT, "..", "shared", "data", "metaqa", "kb_reconstructed.txt")


def damaged(name: str) -> str:
    """Lower-cased, the longest word's last character dropped ("Tokyo Godfathers" -> ...)."""
    words = name.lower().split()
    i = max(range(len(words)), key=lambda j: len(words[j]))
    if len(words[i]) > 4:
        words[i] = words[i][:-1]
    return " ".join(words)


def timed(linker, mentions: list[str]) -> tuple[list[float], list[list]]:
    times, results = [], []
    for m in mentions:
        t0 = time.perf_counter()
        results.append(linker.link(m, top_m=3, mode="fuzzy"))
        times.append((time.perf_counter() - t0) * 1000)
    return times, results


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--mentions", type=int, default=300)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", default=os.path.join(HERE, "results", "db_linking_metaqa.json"))
    args = ap.parse_args(argv)

    from db_server import FalkorDBServer

    with open(KB, encoding="utf-8") as fh:
        triples = [tuple(line.rstrip("\n").split("|")) for line in fh if line.count("|") == 2]
    kg = KnowledgeGraph.from_triples(triples)
    rng = random.Random(args.seed)
    originals = rng.sample(kg.node_names, args.mentions)
    mentions = [damaged(n) for n in originals]
    server = FalkorDBServer().start()
    try:
        t0 = time.perf_counter()
        store = to_falkordb(kg, "127.0.0.1", server.port, graph="bench_linking", progress=False)
        load_s = time.perf_counter() - t0
        store._write("CALL db.idx.fulltext.createNodeIndex('Entity', 'name')")
        while any(r[7] != "OPERATIONAL" for r in store._graph.ro_query(
                "CALL db.indexes()").result_set):
            time.sleep(0.1)
        t0 = time.perf_counter()
        local = linker_for_store(store, mode="fuzzy", use_index=False, progress=False).build()
        local_setup = time.perf_counter() - t0
        t0 = time.perf_counter()
        db = linker_for_store(store, mode="fuzzy", progress=False)
        db_setup = time.perf_counter() - t0
        out = {"graph": {"entities": kg.num_nodes, "triples": kg.num_edges, "load_s": load_s},
               "mentions": args.mentions, "seed": args.seed, "index_source": db.index_source}
        for key, linker, setup in (("local", local, local_setup), ("database", db, db_setup)):
            times, results = timed(linker, mentions)
            top1 = sum(bool(r) and r[0].name == o for r, o in zip(results, originals))
            out[key] = {"setup_s": round(setup, 3),
                        "link_ms_median": round(statistics.median(times), 3),
                        "link_ms_p95": round(sorted(times)[int(0.95 * len(times)) - 1], 3),
                        "top1_recovered": round(top1 / len(mentions), 4)}
        store.close()
    finally:
        server.stop()
    os.makedirs(os.path.dirname(args.out), exist_ok=True)
    with open(args.out, "w", encoding="utf-8") as fh:
        json.dump(stamp(out), fh, indent=1)
    print(json.dumps(out, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
