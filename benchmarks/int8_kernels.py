"""Cost of the int8 scan's kernels (kgrag.embed._int8_kernel) on this CPU, per kernel it runs.

Two measurements per kernel and number of query vectors:

* ``cache``: 1,500 random int8 rows x ``--dim`` (in L2) scanned 200 times, one thread, thread
  CPU time per row -- the arithmetic alone (instruction set), little disturbed by other jobs;
* ``memory``: ``--rows`` rows (default 2.5M: SimGRAG's 10M-edge graph) scanned on the scans'
  thread pool, wall-clock and CPU time -- arithmetic plus memory bandwidth.

Not a test. Run under the benchmark lock::

    flock /work/bench.lock python benchmarks/int8_kernels.py        # -> results/int8_kernels.json
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "shared"))
from machine_info import stamp

from kgrag.embed import _int8_kernel
from kgrag.embed.similarity import get_pool, workers


def arrays(rng: np.random.Generator, rows: int, width: int, m: int) -> tuple:
    codes = rng.integers(-127, 128, size=(rows, width), dtype=np.int8)
    f32 = [rng.random(rows, dtype=np.float32) for _ in range(3)]
    queries = rng.integers(-8000, 8000, size=(m, width), dtype=np.int16)
    return (codes, f32[0], rng.random(rows), f32[1], f32[2], codes.sum(1, dtype=np.int32),
            queries, rng.random(m), rng.random(m), rng.random(m),
            np.empty((m, rows), np.float32), np.empty((m, rows), np.float32))


def in_cache(kernel, args: tuple, rows: int) -> float:
    """Best of 5: thread CPU ns per row over 200 scans of the same rows."""
    kernel(*args, 0, rows)
    best = float("inf")
    for _ in range(5):
        started = time.thread_time()
        for _ in range(200):
            kernel(*args, 0, rows)
        best = min(best, (time.thread_time() - started) / 200 / rows)
    return best * 1e9


def in_memory(kernel, args: tuple, rows: int) -> dict:
    """Median of 5 parallel scans: wall ms and process CPU ms."""
    parts = 4 * workers()
    bounds = np.linspace(0, rows, parts + 1).astype(np.int64)
    walls, cpus = [], []
    for _ in range(5):
        cpu, wall = time.process_time(), time.perf_counter()
        futures = [get_pool().submit(kernel, *args, int(bounds[p]), int(bounds[p + 1]))
                   for p in range(parts)]
        for f in futures:
            f.result()
        walls.append(time.perf_counter() - wall)
        cpus.append(time.process_time() - cpu)
    return {"wall_ms_median": round(1e3 * statistics.median(walls), 1),
            "wall_ms_min": round(1e3 * min(walls), 1),
            "cpu_ms_median": round(1e3 * statistics.median(cpus), 1)}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--dim", type=int, default=384)
    parser.add_argument("--rows", type=int, default=2_500_000)
    parser.add_argument("--queries", default="1,3", help="query vectors per scan")
    parser.add_argument("--out", default=str(ROOT / "benchmarks/results/int8_kernels.json"))
    args = parser.parse_args(argv)
    runnable = (["portable"] + ["avx2"] * _int8_kernel.has_avx2()
                + ["vnni"] * _int8_kernel.has_vnni())
    rng = np.random.default_rng(0)
    results = []
    for m in [int(q) for q in args.queries.split(",")]:
        for name in runnable:
            kernel = _int8_kernel.load(name)
            width = _int8_kernel.row_width(name, args.dim)
            row = {"kernel": name, "query_vectors": m,
                   "cache_ns_per_row": round(in_cache(kernel, arrays(rng, 1500, width, m),
                                                      1500), 1)}
            if args.rows:
                big = arrays(rng, args.rows, width, m)
                row["memory"] = {"rows": args.rows, **in_memory(kernel, big, args.rows)}
                del big
            results.append(row)
            print(json.dumps(row), flush=True)
    report = {"benchmark": "int8_kernels", "dim": args.dim, "best_kernel":
              _int8_kernel.best_kernel(), "threads": workers(), "results": results,
              "command": "python benchmarks/int8_kernels.py " + " ".join(argv or sys.argv[1:])}
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(stamp(report), indent=2) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
