"""UltRAG executor at scale: query latency on a synthetic 10M-edge graph.

The graph is ``benchmarks/synthetic.py``'s seeded power-law graph (10M distinct triples,
2.5M nodes, 200 Zipf-distributed relations). Queries are drawn from the graph itself so every
one has answers: random walks choose the anchor and the relations (each step forwards or
backwards with equal probability), and intersections are built around a node with two incoming
edges. Timed per query with ``time.perf_counter`` on the symbolic max-product / product-t-norm
executor over per-relation CSR matrices (built once before timing):

* ``1p`` / ``2p`` / ``3p`` -- 1-, 2- and 3-hop projection chains from one entity;
* ``2i-p`` -- ``AND(a -> r1, b -> r2) -> r3``, a 2-way intersection followed by a projection;
* ``1p-fuzzy10`` -- a 1-hop projection from a 10-entity fuzzy leaf (the Eq. 2 linking case);
* ``2p-from-hubs`` -- 2-hop chains anchored at the 1,000 highest out-degree nodes (large
  intermediate sets; the hard case);
* ``top50`` -- extracting the top 50 entities of a 2p result (what retrieve() returns).

Target (issue 5): median under 50 ms each. The paper reports 0.10-0.21 s of non-API time per
question on a GH200 with the neural executor on subgraphs of at most 30,000 nodes.

Usage::

    python benchmarks/ultrag_scale.py                      # 10M edges (the target)
    python benchmarks/ultrag_scale.py --edges 1000000 --queries 100
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import statistics
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import synthetic
from machine_info import stamp

from kgrag import KnowledgeGraph
from kgrag.methods.ultrag import SymbolicFuzzyExecutor, parse_query
from kgrag.methods.ultrag.executor import RelationMatrices, top_k

ROOT = Path(__file__).resolve().parent.parent
CACHE = ROOT / "benchmarks" / ".cache"


def rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def random_walk_query(kg: KnowledgeGraph, rng: np.random.Generator, hops: int,
                      starts: np.ndarray | None = None) -> str | None:
    """``Q<a> -> P<r1>[_inv] -> ...`` along a random walk of ``hops`` edges (None if stuck).

    The anchor is the head of a random edge (so nodes are picked in proportion to their
    out-degree), or a random node of ``starts``.
    """
    if starts is not None:
        node = int(starts[rng.integers(len(starts))])
    else:
        node = int(kg.heads[rng.integers(kg.num_edges)])
    text = f"Q{node}"
    for _ in range(hops):
        backwards = bool(rng.integers(2))
        if backwards:
            lo, hi = kg.in_indptr[node], kg.in_indptr[node + 1]
            if hi == lo:
                return None
            edge = int(kg.in_order[rng.integers(lo, hi)])
            node = int(kg.heads[edge])
        else:
            lo, hi = kg.out_indptr[node], kg.out_indptr[node + 1]
            if hi == lo:
                return None
            edge = int(rng.integers(lo, hi))
            node = int(kg.tails[edge])
        text += f" -> P{int(kg.rels[edge])}" + ("_inv" if backwards else "")
    return text


def intersection_query(kg: KnowledgeGraph, rng: np.random.Generator) -> str | None:
    """``AND(Q<a> -> P<r1>, Q<b> -> P<r2>) -> P<r3>`` meeting at a node with >= 2 in-edges."""
    edge = int(rng.integers(kg.num_edges))
    meet = int(kg.tails[edge])
    lo, hi = kg.in_indptr[meet], kg.in_indptr[meet + 1]
    lo_out, hi_out = kg.out_indptr[meet], kg.out_indptr[meet + 1]
    if hi - lo < 2 or hi_out == lo_out:
        return None
    e1, e2 = (int(kg.in_order[i]) for i in rng.choice(np.arange(lo, hi), 2, replace=False))
    e3 = int(rng.integers(lo_out, hi_out))
    return (f"AND(Q{int(kg.heads[e1])} -> P{int(kg.rels[e1])}, "
            f"Q{int(kg.heads[e2])} -> P{int(kg.rels[e2])}) -> P{int(kg.rels[e3])}")


def sample(make, n: int, rng: np.random.Generator) -> list[str]:
    out: list[str] = []
    while len(out) < n:
        q = make(rng)
        if q is not None:
            out.append(q)
    return out


def leaf_sets(kg: KnowledgeGraph, query, fuzzy: bool, rng: np.random.Generator):
    from kgrag.methods.ultrag import leaves

    sets = []
    for leaf in leaves(query):
        node = int(leaf.text[1:])
        if fuzzy:  # the anchor plus 9 random nodes, Eq.-2-like decaying memberships
            others = rng.integers(kg.num_nodes, size=9)
            weights = np.exp(-np.arange(10))
            ids = np.array([node, *others.tolist()], np.int64)
            sets.append((ids, (weights / weights.sum()).astype(np.float32)))
        else:  # as UltRAG.leaf_sets gives them: sparse (ids, memberships)
            sets.append((np.array([node], np.int64), np.ones(1, np.float32)))
    return sets


def time_queries(executor, kg, texts, rng, fuzzy=False, then_top50=False) -> dict:
    times, supports = [], []
    for text in texts:
        query = parse_query(text)
        sets = leaf_sets(kg, query, fuzzy, rng)
        start = time.perf_counter()
        scores = executor.execute(query, sets)
        if then_top50:
            start = time.perf_counter()  # time only the extraction
            top_k(scores, 50)
        times.append((time.perf_counter() - start) * 1000)
        supports.append(int(np.count_nonzero(scores != 0)))
    times.sort()
    return {
        "queries": len(times),
        "median_ms": round(statistics.median(times), 3),
        "p90_ms": round(times[int(0.9 * (len(times) - 1))], 3),
        "max_ms": round(times[-1], 3),
        "median_answers": int(statistics.median(supports)),
        "max_answers": int(max(supports)),
        "example": texts[0],
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--edges", type=int, default=10_000_000)
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", default=None)
    args = parser.parse_args(argv)
    out = Path(args.out or ROOT / "benchmarks" / "results" /
               f"ultrag_scale_{args.edges // 1_000_000}M.json")
    CACHE.mkdir(parents=True, exist_ok=True)

    t0 = time.perf_counter()
    graph, _ = synthetic.cached(args.edges, str(CACHE), seed=args.seed)
    kg = KnowledgeGraph.from_arrays(graph.heads, graph.rels, graph.tails, graph.node_names(),
                                    graph.relation_names())
    build_graph_s = time.perf_counter() - t0
    print(f"graph: {kg.num_nodes} nodes, {kg.num_edges} edges in {build_graph_s:.1f} s",
          file=sys.stderr)
    t0 = time.perf_counter()
    RelationMatrices.for_graph(kg).build_all()
    build_matrices_s = time.perf_counter() - t0
    print(f"relation matrices (forward + inverse, {kg.num_relations} relations) in "
          f"{build_matrices_s:.1f} s", file=sys.stderr)

    rng = np.random.default_rng(args.seed)
    executor = SymbolicFuzzyExecutor(kg)
    workloads = {
        "1p": sample(lambda r: random_walk_query(kg, r, 1), args.queries, rng),
        "2p": sample(lambda r: random_walk_query(kg, r, 2), args.queries, rng),
        "3p": sample(lambda r: random_walk_query(kg, r, 3), args.queries, rng),
        "2i-p": sample(lambda r: intersection_query(kg, r), args.queries, rng),
    }
    hubs = np.argsort(-np.diff(kg.out_indptr), kind="stable")[:1000]
    workloads["2p-from-hubs"] = sample(lambda r: random_walk_query(kg, r, 2, hubs),
                                       args.queries, rng)
    for text in workloads["1p"][:5]:  # warm-up (page in the arrays)
        executor.execute(parse_query(text), leaf_sets(kg, parse_query(text), False, rng))
    results = {}
    for name, texts in workloads.items():
        results[name] = time_queries(executor, kg, texts, rng)
        print(f"{name}: {results[name]}", file=sys.stderr)
    results["1p-fuzzy10"] = time_queries(executor, kg, workloads["1p"], rng, fuzzy=True)
    print(f"1p-fuzzy10: {results['1p-fuzzy10']}", file=sys.stderr)
    results["top50"] = time_queries(executor, kg, workloads["2p"], rng, then_top50=True)
    print(f"top50: {results['top50']}", file=sys.stderr)

    report = {
        "benchmark": "ultrag_scale",
        "command": f"python benchmarks/ultrag_scale.py --edges {args.edges} "
                   f"--queries {args.queries}",
        "machine": f"{platform.machine()}, {os.cpu_count()} cores (shared), Python "
                   f"{platform.python_version()}",
        "graph": {"nodes": kg.num_nodes, "edges": kg.num_edges, "relations": kg.num_relations,
                  "generator": "benchmarks/synthetic.py (power-law, Zipf relations)"},
        "build_graph_s": round(build_graph_s, 2),
        "build_relation_matrices_s": round(build_matrices_s, 2),
        "peak_rss_mb": round(rss_mb(), 1),
        "executor": "SymbolicFuzzyExecutor(projection='max', logic='product')",
        "target_median_ms": 50,
        "results": results,
    }
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(stamp(report), indent=2) + "\n", encoding="utf-8")
    print(f"wrote {out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
