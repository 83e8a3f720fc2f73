"""Benchmark the in-memory ``kgrag.KnowledgeGraph`` (optionally side by side with ByoKG-RAG's
store).

What is measured (medians over many repetitions; see ``benchmarks/README.md``):

* **build** -- time and peak RSS of building the graph, each build in a fresh subprocess.
  Peak RSS is the child's ``VmHWM`` minus the ``VmHWM`` of a child that only imports numpy
  (the "python + numpy" baseline), so library imports count against the library.
  Sources: a triples file (ours ``read_triples`` vs the reference's
  ``LocalKGStore.read_from_csv``), int arrays (``from_arrays``) and a saved graph (``load``).
* **single-source operations** -- one-hop expansion, 2- and 3-relation metapath follow (sources
  sampled so the path exists), shortest path between one pair (undirected and directed).
* **bulk operations** -- 2-hop expansion from 100 sources in both directions, undirected shortest
  paths from 100 sources to 100 targets (max 3 hops), scoring every edge
  (``s_node[heads] + s_rel[rels] + s_node[tails]``, top-k with ``argpartition``).

With ``--reference`` the same operations run on graphrag-byokg's ``LocalKGStore`` + ``GTraversal``
in the same process and run, and the JSON holds the ratios. That store keeps outgoing edges
only; operations that need both directions run on a second ``LocalKGStore`` that holds every
triple in both orientations (the reverse one under ``~relation``), which is how that library's
graph would have to be used for undirected work (its build cost is not charged to it).

Examples::

    python benchmarks/bench_graph.py --edges 1000000 --reference --out
    benchmarks/results/graph_1M.json python benchmarks/bench_graph.py --edges 10000000 --out
    benchmarks/results/graph_10M.json
    python benchmarks/bench_graph.py --file ../shared/data/metaqa/kb_reconstructed.txt --sep '|' \\
        --reference --out benchmarks/results/graph_metaqa.json
"""

from __future__ import annotations

import argparse
import gc
import heapq
import importlib.util
import json
import os
import platform
import statistics
import subprocess
import sys
import time
from typing import Any, Callable

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import synthetic  # noqa: E402
from machine_info import stamp

from kgrag.graph import load_graph, read_triples, save_graph

CACHE_DIR = os.path.join(HERE, ".cache")
TOP_K = 100


# ---------------------------------------------------------------------- the reference store
def load_reference() -> tuple[type, type]:
    """``(LocalKGStore, GTraversal)`` from the installed ``graphrag-byokg`` distribution.

    The two modules import only the standard library, but their package ``__init__`` pulls in
    boto3 and the rest of the toolkit; so the two files are loaded directly by path, which lets
    the package be installed with ``pip install --no-deps graphrag-byokg``.
    """
    spec = importlib.util.find_spec("graphrag_toolkit")
    if spec is None or not spec.submodule_search_locations:
        raise SystemExit("graphrag-byokg is not installed: pip install --no-deps graphrag-byokg")
    root = os.path.join(list(spec.submodule_search_locations)[0], "byokg_rag")

    def load(name: str, rel_path: str) -> Any:
        s = importlib.util.spec_from_file_location(name, os.path.join(root, rel_path))
        module = importlib.util.module_from_spec(s)
        s.loader.exec_module(module)  # type: ignore[union-attr]
        return module

    store = load("byokg_graphstore", "graphstore/graphstore.py")
    traversal = load("byokg_graph_traversal", "graph_retrievers/graph_traversal.py")
    return store.LocalKGStore, traversal.GTraversal


def reference_version() -> str | None:
    try:
        from importlib.metadata import version

        return version("graphrag-byokg")
    except Exception:  # pragma: no cover - not installed
        return None


def symmetric_reference_store(local_kg_store: type, triples: list[tuple[str, str, str]]) -> Any:
    """A LocalKGStore with every triple stored forward and reversed (as ``~relation``)."""
    graph: dict[str, dict[str, dict[str, list]]] = {}
    for h, r, t in triples:
        graph.setdefault(h, {}).setdefault(r, {"triplets": []})["triplets"].append((h, r, t))
        inv = "~" + r
        graph.setdefault(t, {}).setdefault(inv, {"triplets": []})["triplets"].append((t, inv, h))
    return local_kg_store(graph)


# ---------------------------------------------------------------------- memory and timing
def _status_kb(field: str) -> int:
    with open("/proc/self/status") as fh:
        for line in fh:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    raise RuntimeError(f"{field} not in /proc/self/status")


def time_calls(fn: Callable[[Any], Any], args: list[Any], *, min_calls: int,
               max_seconds: float) -> dict:
    """Call ``fn(arg)`` cycling over ``args`` at least ``min_calls`` times (time permitting)."""
    samples: list[float] = []
    deadline = time.perf_counter() + max_seconds
    i = 0
    result_size = 0
    while len(samples) < min_calls or (len(samples) < len(args) and time.perf_counter() < deadline):
        arg = args[i % len(args)]
        start = time.perf_counter_ns()
        out = fn(arg)
        samples.append((time.perf_counter_ns() - start) / 1e6)
        if i < len(args):
            result_size += _size(out)
        i += 1
        if time.perf_counter() > deadline and len(samples) >= 3:
            break
    return {
        "median_ms": statistics.median(samples),
        "p90_ms": float(np.percentile(samples, 90)),
        "calls": len(samples),
        "mean_result_size": result_size / min(i, len(args)),
    }


def _size(out: Any) -> int:
    if isinstance(out, tuple) and out and isinstance(out[0], np.ndarray):
        return int(len(out[-1]))
    try:
        return len(out)
    except TypeError:
        return 1


# ---------------------------------------------------------------------- build in a subprocess
def child_build(kind: str, source: str, sep: str) -> dict:
    """Runs in a fresh interpreter: build once, report seconds and peak / final RSS in MB."""
    gc.collect()
    if kind == "baseline":
        return {"hwm_mb": _status_kb("VmHWM") / 1024, "rss_mb": _status_kb("VmRSS") / 1024}
    if kind.startswith("ref"):
        local_kg_store, _ = load_reference()
    else:
        from kgrag import KnowledgeGraph
    if kind == "ours-arrays":
        g = synthetic.load_arrays(source)
        names, rnames = g.node_names(), g.relation_names()
        start = time.perf_counter()
        graph = KnowledgeGraph.from_arrays(g.heads, g.rels, g.tails, names, rnames)
        seconds = time.perf_counter() - start
        del g, names, rnames
        edges = graph.num_edges
    elif kind == "ours-file":
        start = time.perf_counter()
        graph = read_triples(source, sep=sep, header=False)
        seconds = time.perf_counter() - start
        edges = graph.num_edges
    elif kind == "ours-load":
        start = time.perf_counter()
        graph = load_graph(source)
        seconds = time.perf_counter() - start
        edges = graph.num_edges
    elif kind == "ref-file":
        store = local_kg_store()
        start = time.perf_counter()
        store.read_from_csv(source, delimiter=sep, has_header=False)
        seconds = time.perf_counter() - start
        edges = sum(len(v["triplets"]) for rels in store._graph.values() for v in rels.values())
    else:
        raise SystemExit(f"unknown build kind {kind!r}")
    gc.collect()
    return {"seconds": seconds, "hwm_mb": _status_kb("VmHWM") / 1024,
            "rss_mb": _status_kb("VmRSS") / 1024, "edges": edges}


def build_in_subprocess(kind: str, source: str, sep: str, repeat: int) -> dict:
    runs = []
    for _ in range(repeat):
        proc = subprocess.run(
            [sys.executable, os.path.abspath(__file__), "--_child", kind, "--_source", source,
             "--sep", sep],
            capture_output=True, text=True, check=False)
        if proc.returncode != 0:
            raise RuntimeError(f"build {kind} failed:\n{proc.stderr[-3000:]}")
        runs.append(json.loads(proc.stdout.strip().splitlines()[-1]))
    return runs  # type: ignore[return-value]


def measure_builds(kinds: dict[str, str], sep: str, repeat: int) -> dict:
    base = build_in_subprocess("baseline", "", sep, 3)
    baseline = min(r["hwm_mb"] for r in base)
    out: dict[str, Any] = {"baseline_python_numpy_mb": baseline}
    # interleave the kinds (a, b, c, a, b, c, ...) so that load from other processes on the
    # machine hits every kind alike
    all_runs: dict[str, list] = {kind: [] for kind in kinds}
    for _ in range(repeat):
        for kind, source in kinds.items():
            print(f"  build {kind} ...", file=sys.stderr, flush=True)
            all_runs[kind] += build_in_subprocess(kind, source, sep, 1)
    for kind, runs in all_runs.items():
        out[kind] = {
            "seconds_median": statistics.median(r["seconds"] for r in runs),
            "seconds_runs": [round(r["seconds"], 3) for r in runs],
            "peak_rss_mb": statistics.median(r["hwm_mb"] for r in runs) - baseline,
            "final_rss_mb": statistics.median(r["rss_mb"] for r in runs) - baseline,
            "edges": runs[0]["edges"],
        }
    return out


# ---------------------------------------------------------------------- workloads
def sample_workload(kg: Any, rng: np.random.Generator, n_single: int, n_bulk: int) -> dict:
    """Sources / relation paths / targets chosen from the graph itself so paths exist."""
    out_deg = np.diff(kg.out_indptr)
    has_out = np.flatnonzero(out_deg > 0)
    deg = out_deg + np.diff(kg.in_indptr)
    connected = np.flatnonzero(deg > 0)

    def walk(length: int) -> tuple[int, list[int]]:
        while True:
            e = int(rng.integers(kg.num_edges))
            src, rels, node = int(kg.heads[e]), [int(kg.rels[e])], int(kg.tails[e])
            for _ in range(length - 1):
                lo, hi = int(kg.out_indptr[node]), int(kg.out_indptr[node + 1])
                # a step back to the previous node would be skipped by the reference (self-loop
                # rule)
                if hi == lo:
                    break
                e = int(rng.integers(lo, hi))
                if int(kg.tails[e]) == node:
                    break
                rels.append(int(kg.rels[e]))
                node = int(kg.tails[e])
            if len(rels) == length:
                return src, rels

    return {
        "one_hop": rng.choice(has_out, n_single).tolist(),
        "path2": [walk(2) for _ in range(n_single)],
        "path3": [walk(3) for _ in range(n_single)],
        "pairs": [(int(a), int(b)) for a, b in zip(rng.choice(connected, n_single),
                                                   rng.choice(connected, n_single))],
        "bulk_sources": [rng.choice(connected, n_bulk, replace=False).tolist() for _ in range(5)],
        "bulk_targets": [rng.choice(connected, n_bulk, replace=False).tolist() for _ in range(5)],
    }


def score_all_edges_ours(kg: Any, s_node: np.ndarray, s_rel: np.ndarray, k: int) -> np.ndarray:
    scores = s_node[kg.heads] + s_rel[kg.rels] + s_node[kg.tails]
    top = np.argpartition(scores, -k)[-k:]
    return top[np.argsort(-scores[top], kind="stable")]


def score_all_edges_reference(store: Any, s_node: dict, s_rel: dict, k: int) -> list:
    """The same scoring over the reference store (it has no vectorised edge table)."""
    return heapq.nlargest(k, ((s_node[h] + s_rel[r] + s_node[t], (h, r, t))
                              for h, r, t in store.get_triplets()))


def run_operations(kg: Any, work: dict, reference: Any | None, args: argparse.Namespace) -> dict:
    """Time every operation; for each one, kgrag and the reference run back to back."""
    names, rnames = kg.node_names, kg.relation_names
    single = dict(min_calls=args.single_calls, max_seconds=args.max_seconds)
    bulk = dict(min_calls=args.bulk_calls, max_seconds=args.max_seconds * 3)
    if reference is not None:
        fwd, sym, _, g_traversal = reference
        tf, ts = g_traversal(fwd), g_traversal(sym)

    src_names = [names[s] for s in work["one_hop"]]
    path_named = {key: [(names[s], [rnames[r] for r in rels]) for s, rels in work[key]]
                  for key in ("path2", "path3")}
    pairs = [(names[a], names[b]) for a, b in work["pairs"]]
    bulk_src = [[names[s] for s in group] for group in work["bulk_sources"]]
    bulk_pairs = [(a, [names[t] for t in b]) for a, b in zip(bulk_src, work["bulk_targets"])]
    rng = np.random.default_rng(1)
    s_node = rng.random(kg.num_nodes).astype(np.float32)
    s_rel = rng.random(kg.num_relations).astype(np.float32)
    s_node_d = dict(zip(names, s_node.tolist()))
    s_rel_d = dict(zip(rnames, s_rel.tolist()))

    # (operation, timing options, [(implementation, function, arguments), ...])
    plan: list[tuple[str, dict, list[tuple[str, Callable, list]]]] = [
        ("one_hop_out", single, [
            ("ours", lambda s: kg.one_hop([s], direction="out"), src_names),
            ("ours_ids", lambda s: kg.edges_ids(np.array([s]), "out"), work["one_hop"]),
            ("reference", lambda s: tf.one_hop_triplets([s]), src_names)]),
        ("one_hop_both", single, [
            ("ours", lambda s: kg.one_hop([s], direction="both"), src_names),
            ("ours_ids", lambda s: kg.edges_ids(np.array([s]), "both"), work["one_hop"]),
            ("reference", lambda s: ts.one_hop_triplets([s]), src_names)]),
    ]
    for key, op in (("path2", "follow_path_2rel"), ("path3", "follow_path_3rel")):
        plan.append((op, single, [
            ("ours", lambda a: kg.follow_path([a[0]], a[1]), path_named[key]),
            ("ours_ids", lambda a: kg.follow_path_ids(np.array([a[0]]), [(r, "out") for r in a[1]]),
             work[key]),
            ("reference", lambda a: tf.follow_paths([a[0]], [a[1]]), path_named[key])]))
    plan += [
        ("shortest_path_pair_undirected", single, [
            ("ours", lambda p: kg.shortest_paths([p[0]], [p[1]], max_hops=3, directed=False),
             pairs),
            ("reference", lambda p: ts.shortest_paths([p[0]], [p[1]], max_distance=3), pairs)]),
        ("shortest_path_pair_directed", single, [
            ("ours", lambda p: kg.shortest_paths([p[0]], [p[1]], max_hops=3, directed=True), pairs),
            ("reference", lambda p: tf.shortest_paths([p[0]], [p[1]], max_distance=3), pairs)]),
        ("two_hop_100_both", bulk, [
            ("ours", lambda g: kg.k_hop_subgraph(g, hops=2, direction="both"), bulk_src),
            ("ours_ids", lambda g: kg.k_hop_subgraph_ids(np.asarray(g), hops=2, direction="both"),
             work["bulk_sources"]),
            ("reference", lambda g: ts.multi_hop_triplets(g, hop=2), bulk_src)]),
        ("two_hop_100_out", bulk, [
            ("ours", lambda g: kg.k_hop_subgraph(g, hops=2, direction="out"), bulk_src),
            ("ours_ids", lambda g: kg.k_hop_subgraph_ids(np.asarray(g), hops=2, direction="out"),
             work["bulk_sources"]),
            ("reference", lambda g: tf.multi_hop_triplets(g, hop=2), bulk_src)]),
        ("shortest_paths_100x100_undirected", bulk, [
            ("ours", lambda p: kg.shortest_paths(p[0], p[1], max_hops=3, directed=False),
             bulk_pairs),
            ("ours_ids", lambda p: kg.shortest_paths_ids(
                np.asarray([kg.node_index[n] for n in p[0]]),
                np.asarray([kg.node_index[n] for n in p[1]]), max_hops=3, directed=False),
             bulk_pairs),
            ("reference", lambda p: ts.shortest_paths(p[0], p[1], max_distance=3), bulk_pairs)]),
        ("score_all_edges_topk", bulk, [
            ("ours_ids", lambda _: score_all_edges_ours(kg, s_node, s_rel, TOP_K), [None]),
            ("reference", lambda _: score_all_edges_reference(fwd, s_node_d, s_rel_d, TOP_K),
             [None])]),
    ]
    res: dict[str, dict] = {}
    for op, opts, impls in plan:
        for impl, fn, arglist in impls:
            if impl == "reference" and reference is None:
                continue
            # the reference's graph-wide searches take seconds per call: bulk repetitions
            impl_opts = (bulk if (impl == "reference" and op.startswith("shortest_path_pair"))
                         else opts)
            print(f"  {op:<34} {impl:<10}", end="", file=sys.stderr, flush=True)
            gc.collect()
            m = time_calls(fn, arglist, **impl_opts)
            print(f" median {m['median_ms']:.4f} ms  (n={m['calls']}, "
                  f"size={m['mean_result_size']:.1f})", file=sys.stderr, flush=True)
            res.setdefault(op, {})[impl] = m
        if "reference" in res.get(op, {}):
            for impl, m in res[op].items():
                if impl != "reference":
                    m["speedup_vs_reference"] = res[op]["reference"]["median_ms"] / m["median_ms"]
    return res


# ---------------------------------------------------------------------- main
def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(
        description="Benchmark kgrag.KnowledgeGraph (see module docstring).")
    src = p.add_mutually_exclusive_group()
    src.add_argument("--edges", type=int, help="synthetic graph with this many edges")
    src.add_argument("--file", help="a triples file (e.g. MetaQA's kb_reconstructed.txt)")
    p.add_argument("--sep", default=None, help="separator of --file (default: tab for synthetic, "
                   "sniffed otherwise)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--reference", action="store_true",
                   help="also measure graphrag-byokg's LocalKGStore + GTraversal")
    p.add_argument("--build-repeat", type=int, default=3, help="subprocess builds per kind")
    p.add_argument("--single-calls", type=int, default=300)
    p.add_argument("--bulk-calls", type=int, default=5)
    p.add_argument("--max-seconds", type=float, default=20.0, help="time cap per operation")
    p.add_argument("--no-ops", action="store_true", help="only measure builds")
    p.add_argument("--out", help="write the JSON results here")
    p.add_argument("--_child", help=argparse.SUPPRESS)
    p.add_argument("--_source", help=argparse.SUPPRESS)
    args = p.parse_args(argv)

    if args._child:
        print(json.dumps(child_build(args._child, args._source, args.sep)))
        return 0
    if not args.edges and not args.file:
        p.error("give --edges N or --file PATH")

    from kgrag.graph.io import sniff_separator

    os.makedirs(CACHE_DIR, exist_ok=True)
    result: dict[str, Any] = {
        "python": platform.python_version(), "numpy": np.__version__,
        "machine": f"{platform.machine()}, {os.cpu_count()} cpus",
        "command": " ".join([os.path.relpath(sys.executable)] + sys.argv),
        "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "load_average_at_start": os.getloadavg(),
    }
    if args.edges:
        print(f"synthetic graph, {args.edges} edges", file=sys.stderr)
        graph, npz = synthetic.cached(args.edges, CACHE_DIR, seed=args.seed)
        sep = args.sep or "\t"
        triples_file = synthetic.cached_triples_file(args.edges, CACHE_DIR, seed=args.seed, sep=sep)
        result["graph"] = {"source": "synthetic", **synthetic.describe(graph)}
        del graph
        kinds = {"ours-arrays": npz, "ours-file": triples_file}
        saved_tag = f"synth_{args.edges}_s{args.seed}"
    else:
        triples_file = os.path.abspath(args.file)
        with open(triples_file, encoding="utf-8") as fh:
            sep = args.sep or sniff_separator(next(line for line in fh if line.strip()))
        result["graph"] = {"source": os.path.relpath(triples_file)}
        kinds = {"ours-file": triples_file}
        saved_tag = "file_" + os.path.basename(triples_file).replace(".", "_")
    kg = read_triples(triples_file, sep=sep, header=False)
    result["graph"].update(kg.counts())
    saved_dir = os.path.join(CACHE_DIR, f"{saved_tag}.kg")
    save_graph(kg, saved_dir)
    kinds["ours-load"] = saved_dir
    if args.reference:
        kinds["ref-file"] = triples_file
        result["reference"] = {"package": "graphrag-byokg", "version": reference_version(),
                               "classes": "LocalKGStore + GTraversal"}
    print("builds (subprocesses):", file=sys.stderr)
    result["build"] = builds = measure_builds(kinds, sep, args.build_repeat)
    if args.reference:
        ours, ref = builds["ours-file"], builds["ref-file"]
        builds["ratios_file_build_vs_reference"] = {
            "time": ref["seconds_median"] / ours["seconds_median"],
            "peak_rss": ref["peak_rss_mb"] / ours["peak_rss_mb"],
            "final_rss": ref["final_rss_mb"] / ours["final_rss_mb"],
        }
    if not args.no_ops:
        reference = None
        if args.reference:
            local_kg_store, g_traversal = load_reference()
            fwd = local_kg_store()
            fwd.read_from_csv(triples_file, delimiter=sep, has_header=False)
            sym = symmetric_reference_store(local_kg_store, fwd.get_triplets())
            reference = (fwd, sym, local_kg_store, g_traversal)
        rng = np.random.default_rng(args.seed)
        work = sample_workload(kg, rng, n_single=100, n_bulk=100)
        print("operations:", file=sys.stderr)
        result["operations"] = run_operations(kg, work, reference, args)
    result["load_average_at_end"] = os.getloadavg()
    text = json.dumps(stamp(result), indent=2)
    if args.out:
        os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
        with open(args.out, "w", encoding="utf-8") as fh:
            fh.write(text + "\n")
    print(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
