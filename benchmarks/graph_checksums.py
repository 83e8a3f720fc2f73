"""What the per-file checksums of a saved graph cost (issue 30, item 11a).

Saves a synthetic graph (:mod:`synthetic`: power-law degrees, 200 relations) with its index,
then times, with the files in the page cache (median of ``--repeat`` runs):

* ``digest_*_s``: SHA-256 of every file the manifest lists, of the name tables and edge
  arrays (what a normal load verifies), of the name tables only (what a mapped load with the
  index verifies: it cross-checks every array element instead),
* ``load_s`` / ``load_mmap_s``: ``load_graph`` with verification (format version 2),
* ``load_unverified_s`` / ``load_mmap_unverified_s``: the same folder with its manifest
  rewritten as version 1 (no checksums: the load only warns), i.e. the load without the digest.

    flock /work/bench.lock python benchmarks/graph_checksums.py --edges 1000000
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import platform
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

from machine_info import stamp  # noqa: E402

from kgrag.graph import load_graph, save_graph

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE.parent / "shared"), str(HERE)]
CACHE = HERE / ".cache"
RESULTS = HERE / "results"


def machine() -> dict:
    """CPU model and SIMD flags (every benchmark JSON records them)."""
    model, flags = platform.processor(), []
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name") and not model:
                model = line.split(":", 1)[1].strip()
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
            if line.startswith("flags"):
                flags = [f for f in line.split(":", 1)[1].split()
                         if f.startswith(("avx", "sse4", "fma", "sha"))]
                break
    except OSError:
        pass
    return {"cpu": model, "simd": sorted(set(flags)), "cores": os.cpu_count()}


def timed(fn, repeat: int) -> float:
    runs = []
    for _ in range(repeat):
        started = time.perf_counter()
        fn()
        runs.append(time.perf_counter() - started)
    return round(statistics.median(runs), 4)


def main(argv: list[str] | None = None) -> int:
    import synthetic

    from kgrag import KnowledgeGraph
    from kgrag.graph.checksums import file_digest

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--edges", type=int, default=1_000_000)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--out", default=str(RESULTS / "graph_checksums.json"))
    args = parser.parse_args(argv)
    logging.getLogger("kgrag").setLevel(logging.ERROR)  # the version-1 warning, every load
    out = {"benchmark": "graph_checksums", "loadavg_start": os.getloadavg(), **machine(),
           "command": "flock /work/bench.lock python benchmarks/graph_checksums.py --edges "
                      f"{args.edges}"}
    g, _ = synthetic.cached(args.edges, str(CACHE))
    kg = KnowledgeGraph.from_arrays(g.heads, g.rels, g.tails, g.node_names(), g.relation_names())
    root = Path(tempfile.mkdtemp(prefix="kgrag-checksums-"))
    try:
        verified, unverified = root / "v2", root / "v1"
        out["save_s"] = timed(lambda: save_graph(kg, verified), 1)
        shutil.copytree(verified, unverified)
        manifest = json.loads((unverified / "manifest.json").read_text())
        manifest.pop("checksums")
        (unverified / "manifest.json").write_text(json.dumps({**manifest, "version": 1}))
        files = [p for p in verified.iterdir() if p.name != "manifest.json"]
        out.update(nodes=kg.num_nodes, edges=kg.num_edges,
                   folder_mb=round(sum(p.stat().st_size for p in files) / 2**20, 1))
        tables = [p for p in files if p.suffix == ".json"]
        edges = [verified / f"{name}.npy" for name in ("heads", "rels", "tails")]
        for label, chosen in (("all_files", files), ("tables_and_edges", tables + edges),
                              ("tables", tables)):
            out[f"digest_{label}_s"] = timed(lambda chosen=chosen: [file_digest(p) for p in chosen],
                                             args.repeat)
        for label, folder in (("", verified), ("_unverified", unverified)):
            out[f"load{label}_s"] = timed(lambda folder=folder: load_graph(folder),
                                          args.repeat)
            out[f"load_mmap{label}_s"] = timed(
                lambda folder=folder: load_graph(folder, mmap=True), args.repeat)
    finally:
        shutil.rmtree(root, ignore_errors=True)
    out["loadavg_end"] = os.getloadavg()
    Path(args.out).write_text(json.dumps(stamp(out), indent=2) + "\n")
    print(json.dumps(out, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
