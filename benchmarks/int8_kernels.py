"""Cost of the int8 scan's kernels (kgrag.embed._int8_kernel) on this CPU, per kernel it runs.

Three measurements per kernel and number of query vectors:

* ``cache``: 1,500 random int8 rows x ``--dim`` (in L2) scanned 200 times, one thread, thread
  CPU time per row -- the arithmetic alone (instruction set), little disturbed by other jobs;
* ``memory``: ``--rows`` rows (default 2.5M: SimGRAG's 10M-edge graph) scanned on the scans'
  thread pool, wall-clock and CPU time -- arithmetic plus memory bandwidth -- writing every
  row's bounds (the full scan);
* ``memory_selecting``: the same scan keeping only the ``--keep`` share of rows under a limit,
  as a search does after its sample (``Int8L2Search._bands``).

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
    """The kernel's inputs and (m, rows) outputs; limits +inf (every row's bounds written)."""
    codes = rng.integers(-127, 128, size=(rows, width), dtype=np.int8)
    f32 = [rng.random(rows, dtype=np.float32) for _ in range(3)]
    queries = rng.integers(-8000, 8000, size=(m, width), dtype=np.int16)
    return (codes, f32[0], rng.random(rows), f32[1], f32[2], codes.sum(1, dtype=np.int32),
            queries, rng.random(m), rng.random(m), rng.random(m),
            np.full(m, np.inf, np.float32), np.empty((m, rows), np.int64),
            np.empty((m, rows), np.float32), np.empty((m, rows), np.float32))


def selecting(kernel, args: tuple, rows: int, share: float) -> tuple:
    """``args`` with each query's limit at the ``share`` quantile of its lower bounds (what a
    search keeps: ~1.4 % of 2.5M rows for k = 16384 on random 384-d names)."""
    every = run(kernel, args, rows, parts=1)
    limits = np.quantile(every[12], share, axis=1).astype(np.float32)
    return (*args[:10], limits, *args[11:])


def run(kernel, args: tuple, rows: int, parts: int) -> tuple:
    """One scan of ``rows`` in ``parts`` ranges (on the scans' pool when more than one), each
    range writing from its own first row, as a full scan does."""
    bounds = np.linspace(0, rows, parts + 1).astype(np.int64)
    m = len(args[6])

    def part(p: int) -> None:
        lo, hi = int(bounds[p]), int(bounds[p + 1])
        kernel(*args, np.zeros(m, np.int64), lo, hi - lo, lo, hi)

    if parts == 1:
        part(0)
    else:
        for future in [get_pool().submit(part, p) for p in range(parts)]:
            future.result()
    return args


def in_cache(kernel, args: tuple, rows: int) -> float:
    """Best of 5: thread CPU ns per row over 200 scans of the same rows."""
    run(kernel, args, rows, 1)
    best = float("inf")
    for _ in range(5):
        started = time.thread_time()
        for _ in range(200):
            run(kernel, args, rows, 1)
        best = min(best, (time.thread_time() - started) / 200 / rows)
    return best * 1e9


def in_memory(kernel, args: tuple, rows: int) -> dict:
    """Median of 5 parallel scans: wall ms and process CPU ms."""
    walls, cpus = [], []
    for _ in range(5):
        cpu, wall = time.process_time(), time.perf_counter()
        run(kernel, args, rows, 4 * workers())
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
    parser.add_argument("--keep", type=float, default=0.014,
                        help="share of rows a selecting scan keeps")
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
                big = selecting(kernel, big, args.rows, args.keep)
                row["memory_selecting"] = {"rows": args.rows, "keep": args.keep,
                                           **in_memory(kernel, big, args.rows)}
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
