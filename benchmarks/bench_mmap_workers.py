"""Memory of N worker processes serving one saved graph: private copies vs a shared mapping.

For each size, a synthetic graph (:mod:`synthetic`: power-law degrees, 200 relations, 4 edges
per node) is saved once with its index. Then, per mode, N worker processes (multiprocessing
``spawn``, as uvicorn starts its workers) each

1. import kgrag (the ``baseline`` memory of an idle worker),
2. load the graph -- ``copy``: ``load_graph(path)`` (today's load: arrays read and the
   index rebuilt in every process); ``mmap``: ``load_graph(path, mmap=True)``,
3. run a small query mix (single-node ``one_hop`` and 2-hop ``follow_path`` from random nodes)
   and touch every array page, as a long-running server eventually does,

and while all N are alive the parent reads each worker's ``/proc/<pid>/smaps_rollup``: RSS
(counts shared pages in full in every process), PSS (shared pages divided among the processes
that map them: the sum over workers is the real memory used) and USS (private pages only).

    flock /work/bench.lock python benchmarks/bench_mmap_workers.py --edges 1000000 10000000
"""

from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import os
import sys
import time
from pathlib import Path

from machine_info import stamp

from kgrag.graph import load_graph, save_graph

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE.parent / "shared"), str(HERE)]

CACHE = HERE / ".cache"
RESULTS = HERE / "results"
ARRAYS = ("heads", "rels", "tails", "out_indptr", "out_key", "in_indptr", "in_order", "in_key")


def rollup(pid: int | str = "self") -> dict[str, float]:
    """RSS / PSS / USS / shared (MB) of one process."""
    fields: dict[str, int] = {}
    for line in Path(f"/proc/{pid}/smaps_rollup").read_text().splitlines()[1:]:
        key, _, value = line.partition(":")
        if value.strip().endswith("kB"):
            fields[key] = int(value.split()[0])
    mb = 1024.0
    return {"rss": fields["Rss"] / mb, "pss": fields["Pss"] / mb,
            "uss": (fields["Private_Clean"] + fields["Private_Dirty"]) / mb,
            "shared": (fields["Shared_Clean"] + fields["Shared_Dirty"]) / mb}


def build(edges: int, folder: str) -> dict:
    """Generate and save the graph (run in its own process, so its memory is returned)."""
    import synthetic

    from kgrag import KnowledgeGraph

    g, _ = synthetic.cached(edges, str(CACHE))
    started = time.perf_counter()
    kg = KnowledgeGraph.from_arrays(g.heads, g.rels, g.tails, g.node_names(), g.relation_names())
    save_graph(kg, folder)
    size = sum(p.stat().st_size for p in Path(folder).iterdir())
    return {"nodes": kg.num_nodes, "edges": kg.num_edges, "build_and_save_seconds":
            round(time.perf_counter() - started, 1), "saved_mb": round(size / 2**20, 1)}


def worker(folder: str, mode: str, seed: int, conn) -> None:
    import numpy as np


    baseline = rollup()
    started = time.perf_counter()
    kg = load_graph(folder, mmap=(mode == "mmap"))
    load_seconds = time.perf_counter() - started
    rng = np.random.default_rng(seed)
    names = [kg.node_names[i] for i in rng.integers(0, kg.num_nodes, 300)]
    rel = kg.relation_names
    started = time.perf_counter()
    hops = sum(len(kg.one_hop([n])) for n in names[:200])
    paths = sum(len(kg.follow_path([n], f"{rel[0]} -> {rel[1]}_inv", max_paths=100))
                for n in names[200:])
    query_seconds = time.perf_counter() - started
    checksum = sum(int(np.asarray(getattr(kg, a)).sum()) for a in ARRAYS)  # every page touched
    if kg._adj_tables is not None:
        checksum += int(np.asarray(kg._adj_tables[1]).sum())
    conn.send({"pid": os.getpid(), "baseline": baseline, "load_seconds": round(load_seconds, 2),
               "query_seconds": round(query_seconds, 3), "results": hops + paths,
               "checksum": checksum})
    conn.recv()  # stay alive until the parent has measured every worker
    conn.close()


def run_mode(folder: str, mode: str, workers: int) -> dict:
    ctx = mp.get_context("spawn")
    pipes, procs = [], []
    for i in range(workers):
        parent, child = ctx.Pipe()
        proc = ctx.Process(target=worker, args=(folder, mode, i, child))
        proc.start()
        pipes.append(parent)
        procs.append(proc)
    reports = [p.recv() for p in pipes]  # every worker loaded, queried, touched its pages
    time.sleep(1)
    for r in reports:
        r["memory"] = rollup(r["pid"])
    for p in pipes:
        p.send("done")
    for proc in procs:
        proc.join(60)
    assert len({r["checksum"] for r in reports}) == 1, "workers disagree on the graph"

    def mean(key: str, part: str = "memory") -> float:
        return round(sum(r[part][key] for r in reports) / len(reports), 1)

    return {
        "mode": mode, "workers": workers,
        "rss_per_worker_mb": mean("rss"), "pss_per_worker_mb": mean("pss"),
        "uss_per_worker_mb": mean("uss"),
        "total_pss_mb": round(sum(r["memory"]["pss"] for r in reports), 1),
        "baseline_rss_per_worker_mb": mean("rss", "baseline"),
        "graph_pss_total_mb": round(sum(r["memory"]["pss"] - r["baseline"]["pss"]
                                        for r in reports), 1),
        "load_seconds": [r["load_seconds"] for r in reports],
        "query_seconds": [r["query_seconds"] for r in reports],
    }


def main(argv: list[str] | None = None) -> dict:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--edges", type=int, nargs="+", default=[1_000_000, 10_000_000])
    p.add_argument("--workers", type=int, default=4)
    p.add_argument("--out", default=str(RESULTS / "mmap_workers.json"))
    args = p.parse_args(argv)
    ctx = mp.get_context("spawn")
    out = {"command": "python benchmarks/bench_mmap_workers.py " + " ".join(argv or sys.argv[1:]),
           "loadavg_start": os.getloadavg(), "machine": "shared 2-core machine", "sizes": []}
    for edges in args.edges:
        folder = str(CACHE / f"mmap_synth_{edges}")
        with ctx.Pool(1) as pool:  # build in a separate process: its memory is given back
            info = pool.apply(build, (edges, folder))
        row = {**info, "runs": [run_mode(folder, mode, args.workers) for mode in ("copy", "mmap")]}
        out["sizes"].append(row)
        print(json.dumps(row), flush=True)
    out["loadavg_end"] = os.getloadavg()
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(stamp(out), indent=2) + "\n", encoding="utf-8")
    print(table(out))
    return out


def table(out: dict) -> str:
    lines = ["| edges | load | workers | RSS / worker | PSS / worker | USS / worker | "
             "PSS of all workers | graph's share (PSS - idle) | load s |",
             "|---|---|---|---|---|---|---|---|---|"]
    for row in out["sizes"]:
        for run in row["runs"]:
            lines.append(
                f"| {row['edges']:,} | {run['mode']} | {run['workers']} | "
                f"{run['rss_per_worker_mb']:.0f} MB | {run['pss_per_worker_mb']:.0f} MB | "
                f"{run['uss_per_worker_mb']:.0f} MB | {run['total_pss_mb']:.0f} MB | "
                f"{run['graph_pss_total_mb']:.0f} MB | "
                f"{min(run['load_seconds']):.1f}-{max(run['load_seconds']):.1f} |")
    return "\n".join(lines)


if __name__ == "__main__":
    main()
