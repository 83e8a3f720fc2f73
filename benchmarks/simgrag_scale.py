"""SimGRAG at scale: per-query time of vector search and of the pruned subgraph search on a
synthetic 10M-edge graph, at the paper's FactKG setting k = 3, k(n) = 16384, k(r) = 512.

Graph: :mod:`benchmarks.synthetic` (power-law degrees, Zipf relation frequencies), 10M distinct
edges over 2.5M nodes and 600 relations (DBpedia, the paper's largest graph, has 522).
Embeddings: random unit vectors (``--dim``, default 64) stand in for name embeddings -- the
search does not care where distances come from, and 2.5M MiniLM embeddings would take hours
on this machine. Queries: gold subgraphs are sampled from the graph in four shapes,

* ``1hop``      (A, r, UNKNOWN)                                   -- MetaQA 1-hop
* ``2hop_path`` (A, r1, UNKNOWN 1), (UNKNOWN 1, r2, UNKNOWN 2)    -- MetaQA 2-hop
* ``2hop_conj`` (A, r1, UNKNOWN 1), (UNKNOWN 1, r2, B)            -- FactKG conjunction
* ``3hop_star`` (UNKNOWN 1, r1, A), (UNKNOWN 1, r2, B), (UNKNOWN 1, r3, C) -- FactKG star

and each known pattern item gets a *noisy* copy of its gold vector, ``normalize(z + s * g)`` with
``g ~ N(0, I/d)`` and ``s = --noise`` (default 1.5), so the gold item is near but usually not
the nearest candidate (the paper's Fig. 4 effect) and the search has real work to do.

Every query is checked against the exhaustive enumeration (Algorithm 1 without pruning,
restricted to matches with GSD <= the pruned k-th GSD, which cannot drop a better match) on the
same candidate sets: the top-k keys must be identical. Timing and checking are separate passes
(all queries timed first), so the checks' memory traffic does not slow the timed queries.

Usage::

    python benchmarks/simgrag_scale.py --edges 10000000 --queries 30
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import statistics
import sys
import time
from pathlib import Path

import numpy as np
from machine_info import stamp

from kgrag.graph import load_graph as load_saved_graph
from kgrag.graph import save_graph

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))
CACHE = ROOT / "benchmarks" / ".cache"
RESULTS = ROOT / "benchmarks" / "results" / "simgrag_scale.json"

SHAPES = ("1hop", "2hop_path", "2hop_conj", "3hop_star")


def load_graph(edges: int, relations: int, seed: int):
    import synthetic

    from kgrag import KnowledgeGraph

    saved = CACHE / f"simgrag_synth_{edges}_r{relations}_s{seed}.kg"
    if saved.is_dir():  # sorted and indexed already: loads without re-sorting 10M edges
        return load_saved_graph(saved)
    path = CACHE / f"simgrag_synth_{edges}_r{relations}_s{seed}.npz"
    if path.exists():
        graph = synthetic.load_arrays(str(path))
    else:
        graph = synthetic.generate(edges, num_relations=relations, seed=seed)
        synthetic.save_arrays(graph, str(path))
    kg = KnowledgeGraph.from_arrays(graph.heads, graph.rels, graph.tails,
                                    synthetic.node_names(graph.num_nodes),
                                    synthetic.relation_names(graph.num_relations))
    save_graph(kg, saved)
    return kg


def cached_vectors(rng: np.random.Generator, nodes: int, relations: int,
                   dim: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Node and relation vectors of :func:`unit_rows`, cached as .npy (2.5M x 384 float32 takes
    minutes to draw); ``rng`` is left in the state drawing them would leave it in, so the
    queries are the same with and without the cache."""
    stem = CACHE / f"simgrag_vectors_{nodes}_{relations}_d{dim}_s{seed}"
    files = [stem.with_suffix(s) for s in (".nodes.npy", ".rels.npy", ".rng.json")]
    if all(f.exists() for f in files):
        rng.bit_generator.state = json.loads(files[2].read_text())
        return np.load(files[0]), np.load(files[1])
    node_vectors = unit_rows(rng, nodes, dim)
    rel_vectors = unit_rows(rng, relations, dim)
    for f, v in zip(files, (node_vectors, rel_vectors)):
        np.save(f.with_suffix(".tmp.npy"), v)
        f.with_suffix(".tmp.npy").replace(f)
    files[2].write_text(json.dumps(rng.bit_generator.state))
    return node_vectors, rel_vectors


def unit_rows(rng: np.random.Generator, n: int, dim: int) -> np.ndarray:
    out = np.empty((n, dim), dtype=np.float32)
    for start in range(0, n, 1_000_000):
        block = rng.standard_normal((min(1_000_000, n - start), dim), dtype=np.float32)
        block /= np.linalg.norm(block, axis=1, keepdims=True)
        out[start:start + len(block)] = block
    return out


def noisy(rng: np.random.Generator, vector: np.ndarray, scale: float) -> np.ndarray:
    v = vector + scale * rng.standard_normal(len(vector)).astype(np.float32) / np.sqrt(len(vector))
    return v / np.linalg.norm(v)


def incident(kg, node: int) -> np.ndarray:
    return kg.edges_ids(np.array([node], dtype=np.int64), "both")


def other_end(kg, edge: int, node: int) -> int:
    h, t = int(kg.heads[edge]), int(kg.tails[edge])
    return t if h == node else h


def sample_query(kg, rng: np.random.Generator, shape: str):
    """(gold triples as (head id, rel id, tail id), pattern as id-level triples with None for
    unknown nodes) for one gold subgraph of ``shape``; None when the draw does not fit."""
    e1 = int(rng.integers(kg.num_edges))
    a, r1, m = int(kg.heads[e1]), int(kg.rels[e1]), int(kg.tails[e1])
    if shape == "1hop":
        return [(("n", a), r1, ("u", 1))]
    if shape in ("2hop_path", "2hop_conj"):
        nxt = incident(kg, m)
        nxt = nxt[nxt != e1]
        if len(nxt) == 0:
            return None
        e2 = int(nxt[rng.integers(len(nxt))])
        b = other_end(kg, e2, m)
        if b == a:
            return None
        r2 = int(kg.rels[e2])
        end = ("u", 2) if shape == "2hop_path" else ("n", b)
        second = (("u", 1), r2, end) if int(kg.heads[e2]) == m else (end, r2, ("u", 1))
        return [(("n", a), r1, ("u", 1)), second]
    if shape == "3hop_star":
        center = m
        edges = incident(kg, center)
        ends = np.array([other_end(kg, int(e), center) for e in edges[:2000]])
        _, first = np.unique(ends, return_index=True)
        if len(first) < 3:
            return None
        chosen = rng.choice(edges[:2000][first], size=3, replace=False)
        out = []
        for e in chosen.tolist():
            leaf = other_end(kg, e, center)
            rel = int(kg.rels[e])
            out.append((("u", 1), rel, ("n", leaf)) if int(kg.heads[e]) == center
                       else (("n", leaf), rel, ("u", 1)))
        return out
    raise ValueError(shape)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--edges", type=int, default=10_000_000)
    parser.add_argument("--relations", type=int, default=600)
    parser.add_argument("--dim", type=int, default=64)
    parser.add_argument("--queries", type=int, default=30, help="per shape")
    parser.add_argument("--noise", type=float, default=1.5)
    parser.add_argument("--k", type=int, default=3)
    parser.add_argument("--k-nodes", type=int, default=16384)
    parser.add_argument("--k-relations", type=int, default=512)
    parser.add_argument("--index", default="auto", choices=["auto", "flat", "int8", "hnsw"],
                        help="node search: the library's default (auto: what a user gets; "
                             "exact int8 scan at this size and k(n) when numba is installed), "
                             "exact float32 scan (reference), exact int8 scan, HNSW")
    parser.add_argument("--hnsw-m", type=int, default=32)
    parser.add_argument("--ef-construction", type=int, default=40)
    parser.add_argument("--no-verify", action="store_true")
    parser.add_argument("--no-lookahead", action="store_true",
                        help="prune with Eq. 11's bound only (the paper's search)")
    parser.add_argument("--injective", default="true", choices=["true", "false", "prefer"],
                        help="matching mode (default true: Definition 1, as every earlier run; "
                             "SimGRAG's own default is now 'prefer')")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--shapes", default=",".join(SHAPES),
                        help="comma-separated subset of " + ", ".join(SHAPES))
    parser.add_argument("--profile", nargs="?", const="cumulative", metavar="SORT",
                        help="cProfile the timed pass and print the 30 costliest functions, "
                             "by SORT (a pstats key: cumulative (default), tottime, ...)")
    parser.add_argument("--profile-out", metavar="FILE",
                        help="with --profile, also write the raw profile here (pstats format)")
    parser.add_argument("--out", default=str(RESULTS))
    args = parser.parse_args(argv)

    from kgrag.embed import LookupEmbedder
    from kgrag.methods.simgrag import SimGRAG

    CACHE.mkdir(parents=True, exist_ok=True)
    load_start = [round(x, 1) for x in os.getloadavg()]
    t0 = time.perf_counter()
    kg = load_graph(args.edges, args.relations, args.seed)
    build_graph_s = time.perf_counter() - t0
    print(f"graph {kg} in {build_graph_s:.1f} s", file=sys.stderr)
    rng = np.random.default_rng(args.seed)
    node_vectors, rel_vectors = cached_vectors(rng, kg.num_nodes, kg.num_relations, args.dim,
                                               args.seed)

    queries = []  # (shape, triples as text, {text: vector})
    table = {name: rel_vectors[i] for i, name in enumerate(kg.relation_names)}
    shapes = [s for s in args.shapes.split(",") if s]
    if set(shapes) - set(SHAPES):
        parser.error(f"--shapes: unknown {sorted(set(shapes) - set(SHAPES))}")
    drawn = 0
    for shape in SHAPES:  # every shape is drawn, so a subset gets the same queries
        made = 0
        while made < args.queries:
            sample = sample_query(kg, rng, shape)
            if sample is None:
                continue
            q = drawn  # text keys unique across every drawn query
            drawn += 1
            triples = []
            for j, (h, r, t) in enumerate(sample):
                texts = []
                for end in (h, t):
                    if end[0] == "u":
                        texts.append(f"UNKNOWN entity {end[1]}")
                    else:
                        text = f"q{q} node {end[1]}"
                        table[text] = noisy(rng, node_vectors[end[1]], args.noise)
                        texts.append(text)
                rel_text = f"q{q} rel {j}"
                table[rel_text] = noisy(rng, rel_vectors[r], args.noise)
                triples.append((texts[0], rel_text, texts[1]))
            if shape in shapes:
                queries.append((shape, triples))
            made += 1
    embedder = LookupEmbedder(table)
    injective = {"true": True, "false": False, "prefer": "prefer"}[args.injective]
    t0 = time.perf_counter()
    method = SimGRAG(kg, embedder=embedder, top_k=args.k, node_top_k=args.k_nodes,
                     relation_top_k=args.k_relations, index=args.index, hnsw_m=args.hnsw_m,
                     ef_construction=args.ef_construction, node_vectors=node_vectors,
                     humanize_relations=False, time_limit=None, injective=injective,
                     lookahead=not args.no_lookahead)
    build_index_s = time.perf_counter() - t0
    node_index = method.candidates.node_index
    args.index_used = node_index.kind  # what "auto" resolved to
    args.int8_kernel = getattr(node_index.exact, "kernel", None)
    print(f"index ({args.index} -> {args.index_used}, kernel {args.int8_kernel}) in "
          f"{build_index_s:.1f} s", file=sys.stderr)
    del node_vectors
    gc.collect()

    # warm-up (page in the index and adjacency)
    method.retrieve_pattern(queries[0][1])
    per_shape: dict[str, list[dict]] = {s: [] for s in shapes}
    rows_in_order = []
    profiler = None
    if args.profile:
        import cProfile

        profiler = cProfile.Profile()
        profiler.enable()
    # pass 1: timing only. The exhaustive checks allocate gigabytes; run between queries they
    # push the index and adjacency out of the caches and slow the next query's scan 2x.
    for shape, triples in queries:
        t0 = time.perf_counter()
        result = method.retrieve_pattern(triples)
        total = time.perf_counter() - t0
        row = {"total_s": total, "vector_s": result.metadata["vector_search_seconds"],
               "matching_s": result.metadata["matching_seconds"],
               "partials": result.metadata["partial_matches"],
               "complete": result.metadata["complete"], "results": len(result.items),
               "best_gsd": result.items[0].metadata["gsd"] if result.items else None,
               "item_gsds": sorted(m.metadata["gsd"] for m in result.items)}
        exact = method.candidates.node_index.exact
        if exact is not None:  # rows re-scored in float32, per named node
            row["band_rows"] = list(exact.last_band_sizes)
        per_shape[shape].append(row)
        rows_in_order.append(row)
        print(shape, {k: (round(v, 4) if isinstance(v, float) else v) for k, v in row.items()
                      if k != "item_gsds"}, file=sys.stderr)
    if profiler is not None:
        import pstats

        profiler.disable()
        if args.profile_out:
            profiler.dump_stats(args.profile_out)
        pstats.Stats(profiler, stream=sys.stderr).sort_stats(args.profile).print_stats(30)
    write_report(args, argv, kg, build_graph_s, build_index_s, load_start, per_shape, None)

    # pass 2: each query's top k against exhaustive enumeration on the same candidate sets
    mismatches = 0
    for (shape, triples), row in zip(queries if not args.no_verify else [], rows_in_order):
        t1 = time.perf_counter()
        same, partials, listed_gsds = verify(kg, method, triples, args.k, injective,
                                             lookahead=not args.no_lookahead)
        same &= row["item_gsds"] == sorted(listed_gsds)  # the method shows that list
        row["verify_s"] = time.perf_counter() - t1
        row["exhaustive_partials"] = partials
        row["identical_to_exhaustive"] = same
        mismatches += not same
        print(shape, "identical" if same else "DIFFERENT", f"{row['verify_s']:.1f} s",
              file=sys.stderr)
        write_report(args, argv, kg, build_graph_s, build_index_s, load_start, per_shape,
                     mismatches)  # after every check: a killed run keeps what it verified
    return 0 if mismatches == 0 else 1


def verify(kg, method, triples, k: int, injective, *,
           lookahead: bool) -> tuple[bool, int, list[float]]:
    """Is the pruned top k identical (keys, order) to the exhaustive one? How many partial
    matches the exhaustive enumeration extended, and the pruned list's GSDs.

    Exhaustive = Algorithm 1 without pruning, restricted to GSD <= the pruned list's k-th GSD
    (which cannot drop a better match). For ``"prefer"`` each half is checked on its own bound:
    the injective top k under the injective k-th GSD, and the reusing matches the ranking shows
    (the best, then those beating the (k-1)-th injective one) by enumerating every quotient
    pattern without pruning (:func:`~kgrag.methods.simgrag.topk.enumerate_reusing`); one bound
    for both (the largest listed GSD, often a poor reusing match) made the injective
    enumeration outgrow 24 GB on 3-hop stars.
    """
    import math

    from kgrag.methods.simgrag import Pattern, enumerate_matches, top_k_subgraphs
    from kgrag.methods.simgrag.search import SubgraphSearch
    from kgrag.methods.simgrag.topk import (
        enumerate_reusing,
        prefer_merge,
        prefer_rest_bound,
        top_k_reusing,
    )

    def key(m):
        return (m.gsd, m.edges, m.nodes)

    pattern = Pattern.from_triples(triples)
    node_c, rel_c, _ = method.candidates.candidates(pattern)
    args = (kg, len(pattern.nodes), pattern.edges, node_c, rel_c)
    if injective != "prefer":
        pruned = top_k_subgraphs(*args, k, max_partials=None, injective=injective,
                                 lookahead=lookahead)
        bound = max(m.gsd for m in pruned.matches) if len(pruned.matches) == k else math.inf
        every = enumerate_matches(*args, max_gsd=bound + 1e-9, injective=injective)
        return ([key(m) for m in every.matches[:k]] == [key(m) for m in pruned.matches],
                every.stats["partials"], [m.gsd for m in pruned.matches])
    listed = top_k_subgraphs(*args, k, max_partials=None, injective="prefer",
                             lookahead=lookahead)
    strict = SubgraphSearch(*args, k=k, injective=True, max_partials=None,
                            lookahead=lookahead).run()
    bound = strict.matches[-1].gsd if len(strict.matches) == k else math.inf
    every = enumerate_matches(*args, max_gsd=bound + 1e-9, injective=True)
    ok = [key(m) for m in every.matches[:k]] == [key(m) for m in strict.matches]
    gsds = [m.gsd for m in listed.matches]
    if k == 1 and strict.matches:
        return (ok and [key(m) for m in listed.matches] == [key(strict.matches[0])],
                every.stats["partials"], gsds)
    rest = prefer_rest_bound(strict.matches, k)
    loose = top_k_reusing(*args, k, rest_max_gsd=rest, max_partials=None, lookahead=lookahead)
    # anything better than a listed reusing match, or (list not full) up to the rest bound
    listed_max = max((m.gsd for m in loose.matches), default=math.inf)
    loose_bound = listed_max if len(loose.matches) == k else max(listed_max, rest)
    reusing = enumerate_reusing(*args, max_gsd=loose_bound + 1e-9)[:k]
    shown = reusing[:1] + [m for m in reusing[1:] if m.gsd <= rest + 1e-9]
    ok &= [key(m) for m in shown] == [key(m) for m in loose.matches]
    merged = prefer_merge(every.matches[:k], shown, k)
    ok &= [key(m) for m in merged] == [key(m) for m in listed.matches]
    return ok, every.stats["partials"], gsds


def write_report(args, argv, kg, build_graph_s, build_index_s, load_start, per_shape,
                 mismatches) -> None:
    def summary(rows: list[dict]) -> dict:
        out = {"queries": len(rows)}
        for key in ("total_s", "vector_s", "matching_s"):
            values = [r[key] for r in rows]
            out[f"{key[:-2]}_ms_median"] = round(1000 * statistics.median(values), 2)
            out[f"{key[:-2]}_ms_p90"] = round(1000 * float(np.percentile(values, 90)), 2)
            out[f"{key[:-2]}_ms_max"] = round(1000 * max(values), 2)
        out["partials_median"] = int(statistics.median(r["partials"] for r in rows))
        bands = [b for r in rows for b in r.get("band_rows", [])]
        if bands:
            out["band_rows_median"] = int(statistics.median(bands))
        checked = [r for r in rows if "exhaustive_partials" in r]
        if checked:
            out["exhaustive_partials_median"] = int(statistics.median(
                r["exhaustive_partials"] for r in checked))
            out["identical_to_exhaustive"] = sum(r["identical_to_exhaustive"] for r in checked)
            out["checked"] = len(checked)
        out["complete"] = sum(r["complete"] for r in rows)
        return out

    report = {
        "benchmark": "simgrag_scale",
        "graph": {"nodes": kg.num_nodes, "edges": kg.num_edges, "relations": kg.num_relations,
                  "build_seconds": round(build_graph_s, 1)},
        "settings": {"k": args.k, "k_nodes": args.k_nodes, "k_relations": args.k_relations,
                     "dim": args.dim, "noise": args.noise, "index": args.index,
                     "index_used": args.index_used, "int8_kernel": args.int8_kernel,
                     "injective": args.injective,
                     "lookahead": not args.no_lookahead,
                     "index_build_seconds": round(build_index_s, 1), "seed": args.seed,
                     "embeddings": "random unit vectors; pattern items = noisy copies of gold"},
        "machine": {"load_average_at_start": load_start,
                    "load_average_at_end": [round(x, 1) for x in os.getloadavg()]},
        "all_identical_to_exhaustive": None if mismatches is None else mismatches == 0,
        "verified": sum("identical_to_exhaustive" in r for rows in per_shape.values()
                        for r in rows),
        "shapes": {s: summary(rows) for s, rows in per_shape.items()},
        "overall_total_ms_median": round(1000 * statistics.median(
            r["total_s"] for rows in per_shape.values() for r in rows), 2),
        "slowest_total_ms": round(1000 * max(
            r["total_s"] for rows in per_shape.values() for r in rows), 2),
        "command": "python benchmarks/simgrag_scale.py " + " ".join(argv if argv is not None
                                                                     else sys.argv[1:]),
    }
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(stamp(report), indent=2) + "\n", encoding="utf-8")
    if mismatches is None or sum(len(r) for r in per_shape.values()) == report["verified"]:
        print(json.dumps(report, indent=2), file=sys.stderr)


if __name__ == "__main__":
    raise SystemExit(main())
