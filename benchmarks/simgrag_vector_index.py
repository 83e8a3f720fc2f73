"""SimGRAG candidate search: exact flat search vs FAISS HNSW at the paper's large k(n).

Why ``index="auto"`` stays flat when k(n) > 1024: HNSW's search cost grows with efSearch, and
the paper sets efSearch = 8 k, so at k(n) = 16384 it visits far more vectors than an exact scan
of a few million rows. Random unit vectors (``--dim``, default 64) stand in for name
embeddings -- the worst case for HNSW's recall, so recall numbers here are a floor; queries are
noisy copies of stored vectors. Recall is measured against exact search.

Usage::

    python benchmarks/simgrag_vector_index.py --names 500000 --queries 5
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path

import numpy as np
from machine_info import stamp

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "results" / "simgrag_vector_index.json"


def unit_rows(rng: np.random.Generator, n: int, dim: int) -> np.ndarray:
    rows = rng.standard_normal((n, dim), dtype=np.float32)
    rows /= np.linalg.norm(rows, axis=1, keepdims=True)
    return rows


def timed_search(index, queries: np.ndarray, k: int) -> tuple[float, list[np.ndarray]]:
    """Median milliseconds per query and the ids found for each query."""
    times, found = [], []
    for q in queries:
        started = time.perf_counter()
        cands = index.search(q[None, :], k)[0]
        times.append(time.perf_counter() - started)
        found.append(cands.ids)
    return 1000 * statistics.median(times), found


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--names", type=int, default=500_000)
    parser.add_argument("--dim", type=int, default=64)
    parser.add_argument("--queries", type=int, default=5)
    parser.add_argument("--hnsw-m", type=int, default=32)
    parser.add_argument("--ef-construction", type=int, default=40)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", default=str(RESULTS))
    args = parser.parse_args(argv)

    from kgrag.methods.simgrag.candidates import NameIndex

    rng = np.random.default_rng(args.seed)
    vectors = unit_rows(rng, args.names, args.dim)
    picks = rng.choice(args.names, size=args.queries, replace=False)
    queries = vectors[picks] + 1.5 / np.sqrt(args.dim) * rng.standard_normal(
        (args.queries, args.dim), dtype=np.float32)
    queries /= np.linalg.norm(queries, axis=1, keepdims=True)
    load_start = [round(x, 1) for x in os.getloadavg()]

    flat = NameIndex(vectors, index="flat")
    started = time.perf_counter()
    hnsw = NameIndex(vectors, index="hnsw", hnsw_m=args.hnsw_m,
                     ef_construction=args.ef_construction)
    build_s = time.perf_counter() - started
    print(f"HNSW build {build_s:.1f} s", file=sys.stderr)

    rows = []
    for k, factor in ((16, 8), (16384, 1), (16384, 2), (16384, 8)):
        flat_ms, exact = timed_search(flat, queries, k)
        hnsw.ef_search_factor = factor
        hnsw_ms, approx = timed_search(hnsw, queries, k)
        recall = statistics.mean(len(np.intersect1d(a, e)) / k for a, e in zip(approx, exact))
        row = {"k": k, "ef_search": max(k, factor * k),
               "flat_ms_median": round(flat_ms, 2), "hnsw_ms_median": round(hnsw_ms, 2),
               "hnsw_recall": round(recall, 4)}
        rows.append(row)
        print(row, file=sys.stderr)

    report = {
        "benchmark": "simgrag_vector_index",
        "settings": {"names": args.names, "dim": args.dim, "queries": args.queries,
                     "hnsw_m": args.hnsw_m, "ef_construction": args.ef_construction,
                     "seed": args.seed, "vectors": "random unit vectors; queries noisy copies"},
        "machine": {"cpus": os.cpu_count(), "load_average_at_start": load_start,
                    "load_average_at_end": [round(x, 1) for x in os.getloadavg()]},
        "hnsw_build_seconds": round(build_s, 1),
        "rows": rows,
    }
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(stamp(report), indent=2) + "\n", encoding="utf-8")
    print(json.dumps(report, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
