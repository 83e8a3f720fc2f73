"""UltRAG's neural executor (UltraQuery) vs the symbolic one: incomplete graphs and latency.

``incomplete`` -- the paper's claim that the neural executor keeps working where edges are
missing. For each dataset (MetaQA 1/2/3-hop, PathQuestion PQ-2H / PQ-3H) a seeded sample of
questions becomes its oracle DSL query (``Q<topic> -> P<r1>[_inv] -> ...``, what a perfect LLM
would write). The **targets** are the query's answers on the *complete* KB (symbolic execution,
topic removed). Then a seeded 10 / 30 / 50 % of the KB's edges is removed and both executors run
the same queries on the damaged graph. Reported (in %): MRR, Hits@1, Hits@10 of the targets
(tie-aware expectations, :func:`kgrag.eval.ranking.tie_aware_metrics`, topic filtered), over
all questions and separately over the questions whose targets the symbolic executor can no
longer reach at all on the damaged graph (all targets score 0). Drop 0 % is the complete graph.

``latency`` -- per-query time of the neural executor for 1p / 2p / 3p / 2i / ip queries drawn by
random walks: on MetaQA (whole graph, 43k nodes: the size rule keeps it under 50,000) and on
synthetic 1M / 10M-edge graphs (``benchmarks/synthetic.py``), where each query runs on the
SEPPR subgraph of its anchors (``UltRAG.run`` end to end: SEPPR, induced subgraph, model input
preparation, forward passes). Peak RSS and torch threads are recorded.

Usage::

    python benchmarks/ultrag_neural.py incomplete --limit 300
    python benchmarks/ultrag_neural.py latency --dataset metaqa --queries 30
    python benchmarks/ultrag_neural.py latency --dataset synthetic --edges 10000000 --queries 20
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
from machine_info import stamp

from kgrag import KnowledgeGraph
from kgrag.eval import load_metaqa, load_pathquestion
from kgrag.eval.ranking import tie_aware_metrics
from kgrag.graph import read_triples
from kgrag.graph.memory import normalize_name
from kgrag.methods.ultrag import SymbolicFuzzyExecutor, UltRAG, parse_query
from kgrag.methods.ultrag.executor import one_hot

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT.parent / "shared" / "data"
RESULTS = ROOT / "benchmarks" / "results"
CACHE = ROOT / "benchmarks" / ".cache"
DROPS = (0.0, 0.1, 0.3, 0.5)


def rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def machine() -> dict:
    import torch

    return {"machine": f"{platform.machine()}, {os.cpu_count()} cores (shared with other "
                       f"engineers' jobs)", "python": platform.python_version(),
            "torch": torch.__version__, "load_average": list(os.getloadavg())}


def oracle_query(kg: KnowledgeGraph, topic: int, steps) -> str:
    text = f"Q{topic}"
    for step in steps:
        text += f" -> P{kg.relation_index[step.relation]}" + ("_inv" if step.direction == "in"
                                                              else "")
    return text


def damaged(kg: KnowledgeGraph, drop: float, seed: int) -> KnowledgeGraph:
    """``kg`` without a seeded ``drop`` share of its edges (same node and relation ids)."""
    if drop == 0:
        return kg
    keep = np.random.default_rng(seed).random(kg.num_edges) >= drop
    return KnowledgeGraph.from_arrays(kg.heads[keep], kg.rels[keep], kg.tails[keep],
                                      kg.node_names, kg.relation_names)


def datasets(limit: int, seed: int, only: list[str] | None):
    if not only or any(n.startswith("PQ") for n in only):
        for name, questions, kb in (("PQ-2H", "PQ-2H.txt", "2H-kb.txt"),
                                    ("PQ-3H", "PQ-3H.txt", "3H-kb.txt")):
            if only and name not in only:
                continue
            kg = read_triples(DATA / "pathquestion" / kb, sep="\t", header=False)
            # every question, sampled after the ones whose topic is not in the KB are dropped
            # (see ``incomplete``), so a PathQuestion set still gives ``limit`` questions
            yield name, kg, load_pathquestion(DATA / "pathquestion" / questions, limit=None,
                                              seed=seed)
    if not only or any(n.startswith("MetaQA") for n in only):
        kg = read_triples(DATA / "metaqa" / "kb_reconstructed.txt", sep="|",
                                     header=False)
        for hop in (1, 2, 3):
            name = f"MetaQA-{hop}hop"
            if only and name not in only:
                continue
            yield name, kg, load_metaqa(DATA / "metaqa", hop, limit=limit, seed=seed)


KINDS = ("symbolic", "neural", "hybrid")
#: reliability bins of the neural confidence (the calibration check)
BINS = np.linspace(0.0, 1.0, 11)


def top1(scores: np.ndarray) -> int:
    """The first-ranked node (score descending, ties by lower id, as UltRAG ranks)."""
    best = scores.max()
    return int(np.flatnonzero(scores == best)[0])


def last_relation(kg: KnowledgeGraph, query) -> str:
    rel = query.relation.name
    return kg.relation_names[int(rel[1:])] + ("_inv" if query.relation.inverse else "")


def calibration(pairs: list[tuple[float, bool]]) -> dict:
    """Reliability of a confidence: per bin, how many and how many were right; the expected
    calibration error (share-weighted |accuracy - mean confidence|)."""
    if not pairs:
        return {}
    conf = np.array([c for c, _ in pairs])
    hit = np.array([h for _, h in pairs], float)
    bins, ece = [], 0.0
    which = np.clip(np.digitize(conf, BINS[1:-1]), 0, len(BINS) - 2)
    for b in range(len(BINS) - 1):
        m = which == b
        if not m.any():
            continue
        gap = abs(hit[m].mean() - conf[m].mean())
        ece += m.mean() * gap
        bins.append({"bin": f"{BINS[b]:.1f}-{BINS[b + 1]:.1f}", "n": int(m.sum()),
                     "mean_confidence": round(float(conf[m].mean()), 3),
                     "accuracy": round(float(hit[m].mean()), 3)})
    return {"pairs": len(pairs), "ece": round(float(ece), 3), "bins": bins}


def incomplete(args: argparse.Namespace) -> dict:
    """Exact / neural / hybrid (the default) on complete and damaged KBs; also the frequency
    prior as a ranking, per-relation numbers where the exact executor has nothing, the
    calibration of the neural confidence, and each executor's median ``UltRAG.run`` time."""
    from tqdm import tqdm

    report = {"benchmark": "ultrag_neural incomplete (exact / neural / hybrid)",
              "threads": args.threads,
              "command": f"python benchmarks/ultrag_neural.py incomplete --limit {args.limit} "
                         f"--seed {args.seed} --threads {args.threads}"
                         + (f" --subgraph-k {args.subgraph_k}" if args.subgraph_k else "")
                         + (f" --only {' '.join(args.only)}" if args.only else ""),
              "subgraph_k": args.subgraph_k, **machine(),
              "datasets": {}}
    calib: dict[str, list] = {"neural_all_top10": [], "hybrid_guesses_top10": []}
    relations: dict[str, dict] = {}
    for name, kg, examples in datasets(args.limit, args.seed, args.only):
        questions = []
        complete = SymbolicFuzzyExecutor(kg)
        for ex in examples:
            topic = kg.node_index.get(normalize_name(ex.entities[0])) if ex.entities else None
            if topic is None or not ex.relation_path:
                continue
            query = parse_query(oracle_query(kg, topic, ex.relation_path))
            scores = complete.execute(query, [one_hot([topic], kg.num_nodes)])
            scores[topic] = 0
            targets = np.flatnonzero(scores > 0)
            if len(targets):
                questions.append((query, topic, targets))
        if len(questions) > args.limit:  # PathQuestion: a seeded sample of the usable ones
            keep = np.random.default_rng(args.seed).choice(len(questions), args.limit,
                                                            replace=False)
            questions = [questions[i] for i in sorted(keep)]
        per_drop = {}
        for drop in DROPS:
            graph = damaged(kg, drop, args.seed)
            # Alg. 2 on MetaQA: the neural executor on the SEPPR subgraph around the topic
            seppr = args.subgraph_k is not None and graph.num_nodes > args.subgraph_k
            k = args.subgraph_k if seppr else None
            methods = {kind: UltRAG(graph, linking="exact", executor=kind, threads=args.threads,
                                    subgraph_k=None if kind == "symbolic" else k)
                       for kind in KINDS}
            prior = methods["symbolic"].frequency_prior
            warm = questions[0][0]  # warm-up: model load, each neural executor's graph
            methods["neural"].run(warm)
            sets, leaf_entities = methods["hybrid"].leaf_sets(warm)
            methods["hybrid"].graph_executor.neural.execute(warm, sets, leaf_entities)
            rows: dict[str, list] = {k: [] for k in (*KINDS, "prior")}
            times: dict[str, list] = {k: [] for k in KINDS}
            lost, neural_ran, agree = [], [], {k: [] for k in ("neural", "hybrid")}
            for query, topic, targets in tqdm(questions, desc=f"{name} drop {drop:.0%}",
                                              file=sys.stderr, mininterval=10):
                got = {}
                for kind in KINDS:
                    start = time.perf_counter()
                    execution = methods[kind].run(query)
                    times[kind].append(time.perf_counter() - start)
                    got[kind] = execution
                    rows[kind].append(tie_aware_metrics(execution.scores, targets, ks=(1, 10),
                                                        exclude=[topic]))
                exact = got["symbolic"].scores.copy()
                exact[topic] = 0
                unreachable = bool(exact[targets].max() <= 0)
                lost.append(unreachable)
                neural_ran.append(got["hybrid"].neural_scores is not None)
                prior_scores = prior.of_query(query)
                rows["prior"].append(tie_aware_metrics(prior_scores, targets, ks=(1, 10),
                                                       exclude=[topic]))
                if exact.any():  # does the top answer agree with an exact answer?
                    for kind in agree:
                        scores = got[kind].scores.copy()
                        scores[topic] = 0
                        agree[kind].append(bool(exact[top1(scores)] > 0))
                target_set = set(targets.tolist())
                neural = got["neural"].scores.copy()
                neural[topic] = 0
                for i in np.argsort(-neural, kind="stable")[:10]:
                    calib["neural_all_top10"].append((float(neural[i]), int(i) in target_set))
                hybrid = got["hybrid"]
                if hybrid.neural_scores is not None and not exact.any():
                    guesses = hybrid.neural_scores.copy()
                    guesses[topic] = 0
                    for i in np.argsort(-guesses, kind="stable")[:10]:
                        calib["hybrid_guesses_top10"].append((float(guesses[i]),
                                                              int(i) in target_set))
                if unreachable and drop > 0:
                    rel = relations.setdefault(f"{name}: {last_relation(kg, query)}",
                                               {"neural": [], "prior": []})
                    rel["neural"].append(rows["neural"][-1]["mrr"])
                    rel["prior"].append(rows["prior"][-1]["mrr"])
            lost_arr = np.array(lost)

            def mean(kind: str, mask: np.ndarray, rows: dict = rows) -> dict:
                picked = [r for r, m in zip(rows[kind], mask) if m]
                if not picked:
                    return {}
                return {k: round(100 * float(np.mean([r[k] for r in picked])), 2)
                        for k in ("mrr", "hits@1", "hits@10")}

            every = np.ones(len(questions), bool)
            per_drop[f"{int(drop * 100)}%"] = {
                "edges": graph.num_edges,
                "questions": len(questions),
                "unreachable_symbolically": int(lost_arr.sum()),
                "all": {k: mean(k, every) for k in rows},
                "unreachable": {k: mean(k, lost_arr) for k in rows},
                "top1_agrees_with_exact": {
                    k: {"questions_with_exact_answers": len(v),
                        "agree_pct": round(100 * float(np.mean(v)), 2) if v else None}
                    for k, v in agree.items()},
                "hybrid_neural_ran_pct": round(100 * float(np.mean(neural_ran)), 2),
                "median_ms": {k: round(1000 * statistics.median(v), 3)
                              for k, v in times.items()},
                "mean_ms": {k: round(1000 * statistics.fmean(v), 3) for k, v in times.items()},
                "neural_subgraph_k": k,
            }
            print(name, drop, json.dumps(per_drop[f"{int(drop * 100)}%"]), file=sys.stderr)
        report["datasets"][name] = {"kb_nodes": kg.num_nodes, "kb_edges": kg.num_edges,
                                    "drops": per_drop}
        report["load_average_end"] = list(os.getloadavg())
        write(report, args.out or RESULTS / "ultrag_neural_incomplete.json")
    report["per_relation_unreachable"] = {
        key: {"questions": len(v["neural"]),
              "neural_mrr": round(100 * float(np.mean(v["neural"])), 2),
              "prior_mrr": round(100 * float(np.mean(v["prior"])), 2),
              "flagged": bool(np.mean(v["neural"]) <= np.mean(v["prior"]))}
        for key, v in sorted(relations.items())}
    report["calibration"] = {k: calibration(v) for k, v in calib.items()}
    report["peak_rss_mb"] = round(rss_mb())
    write(report, args.out or RESULTS / "ultrag_neural_incomplete.json")
    return report


# ----------------------------------------------------------------------------------- latency
def walk(kg: KnowledgeGraph, rng: np.random.Generator, hops: int, start: int | None = None):
    """``(anchor, [(rel, inverse), ...], end)`` of a random walk, or None if it gets stuck."""
    node = int(kg.heads[rng.integers(kg.num_edges)]) if start is None else start
    anchor, steps = node, []
    for _ in range(hops):
        out = kg.edges_ids(np.array([node]), direction="both")
        if len(out) == 0:
            return None
        e = int(out[rng.integers(len(out))])
        if kg.heads[e] == node:
            steps.append((int(kg.rels[e]), False))
            node = int(kg.tails[e])
        else:
            steps.append((int(kg.rels[e]), True))
            node = int(kg.heads[e])
    return anchor, steps, node


def chain(anchor: int, steps) -> str:
    return f"Q{anchor}" + "".join(f" -> P{r}" + ("_inv" if inv else "") for r, inv in steps)


def branch_into(kg: KnowledgeGraph, edge: int, node: int) -> str:
    """A one-hop branch along ``edge`` that arrives at ``node`` (from the edge's other end)."""
    if int(kg.tails[edge]) == node:
        return f"Q{int(kg.heads[edge])} -> P{int(kg.rels[edge])}"
    return f"Q{int(kg.tails[edge])} -> P{int(kg.rels[edge])}_inv"


def step_from(kg: KnowledgeGraph, edge: int, node: int) -> str:
    """The relation token that leaves ``node`` along ``edge``."""
    return f"P{int(kg.rels[edge])}" + ("" if int(kg.heads[edge]) == node else "_inv")


def make_queries(kg: KnowledgeGraph, n: int, seed: int) -> dict[str, list[str]]:
    """Random-walk queries (all have answers): chains, and intersections at a node reached
    by two different edges (``ip`` continues from it along a third)."""
    rng = np.random.default_rng(seed)
    out: dict[str, list[str]] = {k: [] for k in ("1p", "2p", "3p", "2i", "ip")}
    tries = 0
    while min(len(v) for v in out.values()) < n and tries < 200 * n:
        tries += 1
        for hops, key in ((1, "1p"), (2, "2p"), (3, "3p")):
            w = walk(kg, rng, hops)
            if w and len(out[key]) < n:
                out[key].append(chain(w[0], w[1]))
        v = int(kg.tails[rng.integers(kg.num_edges)])
        edges = kg.edges_ids(np.array([v]), direction="both")
        if len(edges) < 3:
            continue
        e1, e2, e3 = (int(e) for e in rng.choice(edges, size=3, replace=False))
        two = f"AND({branch_into(kg, e1, v)}, {branch_into(kg, e2, v)})"
        if len(out["2i"]) < n:
            out["2i"].append(two)
        if len(out["ip"]) < n:
            out["ip"].append(f"{two} -> {step_from(kg, e3, v)}")
    return out


def latency(args: argparse.Namespace) -> dict:
    import torch

    torch.set_num_threads(args.threads)
    t0 = time.perf_counter()
    if args.dataset == "metaqa":
        kg = read_triples(DATA / "metaqa" / "kb_reconstructed.txt", sep="|",
                                     header=False)
        label = "MetaQA KB"
    else:
        import synthetic

        CACHE.mkdir(parents=True, exist_ok=True)
        graph, _ = synthetic.cached(args.edges, str(CACHE), seed=args.seed)
        kg = KnowledgeGraph.from_arrays(graph.heads, graph.rels, graph.tails,
                                        graph.node_names(), graph.relation_names())
        del graph
        label = f"synthetic {args.edges:,} edges"
    load_s = time.perf_counter() - t0
    queries = make_queries(kg, args.queries, args.seed)
    if args.executor == "compare":
        return compare_latency(args, kg, queries, label)
    method = UltRAG(kg, linking="exact", executor=args.executor, threads=args.threads,
                    subgraph_k=args.subgraph_k)
    method.run(queries["1p"][0])  # warm-up: model load, first relation graph
    # pass 1 is what a fresh process gets: per-relation caches (relation embeddings, the
    # background states of UltraQuery's far nodes) fill while it runs; pass 2 repeats the same
    # queries with them filled, as a long-running service sees them
    passes = []
    for _ in range(args.passes):
        results = {}
        for shape, texts in queries.items():
            times, projections = [], []
            for text in texts:
                q = parse_query(text)
                start = time.perf_counter()
                execution = method.run(q)
                times.append(1000 * (time.perf_counter() - start))
                projections.append(text.count("->"))
                assert execution.scores.shape == (kg.num_nodes,)
            per_projection = [t / p for t, p in zip(times, projections)]
            results[shape] = {"queries": len(times),
                              "median_ms": round(statistics.median(times), 1),
                              "p90_ms": round(float(np.percentile(times, 90)), 1),
                              "median_ms_per_projection": round(
                                  statistics.median(per_projection), 1)}
            print(f"pass {len(passes) + 1}", shape, results[shape], file=sys.stderr)
        passes.append(results)
    results = passes[0]
    report = {"benchmark": "ultrag_neural latency", "executor": args.executor, "graph": label,
              "nodes": kg.num_nodes,
              "edges": kg.num_edges, "relations": kg.num_relations, "threads": args.threads,
              "subgraph_k": method.graph_executor.subgraph_k, "graph_load_s": round(load_s, 1),
              "command": " ".join(["python benchmarks/ultrag_neural.py latency",
                                   f"--dataset {args.dataset}",
                                   *([f"--edges {args.edges}"] if args.dataset != "metaqa"
                                     else []),
                                   f"--queries {args.queries} --threads {args.threads}",
                                   *([f"--passes {args.passes}"] if args.passes != 1 else []),
                                   *([f"--executor {args.executor}"]
                                     if args.executor != "neural" else []),
                                   *([f"--subgraph-k {args.subgraph_k}"] if args.subgraph_k
                                     else [])]),
              **machine(), "results": results,
              **({"results_warm": passes[-1]} if len(passes) > 1 else {}),
              "peak_rss_mb": round(rss_mb())}
    name = "metaqa" if args.dataset == "metaqa" else f"{args.edges // 1_000_000}M"
    suffix = (f"_k{args.subgraph_k}" if args.subgraph_k else "") + (
        f"_{args.executor}" if args.executor != "neural" else "")
    write(report,
          args.out or RESULTS / f"ultrag_neural_latency_{name}_t{args.threads}{suffix}.json")
    return report


def compare_latency(args: argparse.Namespace, kg: KnowledgeGraph,
                    queries: dict[str, list[str]], label: str) -> dict:
    """The exact executor and the default (hybrid) on the same random-walk queries (all have
    answers), interleaved query by query in one process over ``--reps`` passes, so both see the
    same machine load: per shape the median of each, their ratio, and how often the default
    ran the neural executor."""
    methods = {kind: UltRAG(kg, linking="exact", executor=kind, threads=args.threads,
                            subgraph_k=args.subgraph_k) for kind in ("symbolic", "hybrid")}
    for method in methods.values():
        method.run(queries["1p"][0])  # warm-up: relation matrices
    results = {}
    for shape, texts in queries.items():
        times: dict[str, list[float]] = {kind: [] for kind in methods}
        neural_ran = 0
        for _ in range(args.reps):
            for text in texts:
                q = parse_query(text)
                for kind, method in methods.items():
                    start = time.perf_counter()
                    execution = method.run(q)
                    times[kind].append(1000 * (time.perf_counter() - start))
                    neural_ran += kind == "hybrid" and execution.neural_scores is not None
        medians = {kind: statistics.median(v) for kind, v in times.items()}
        results[shape] = {"queries": len(texts), "reps": args.reps,
                          "median_ms": {k: round(v, 3) for k, v in medians.items()},
                          "ratio": round(medians["hybrid"] / medians["symbolic"], 2),
                          "hybrid_neural_ran": neural_ran // args.reps}
        print(shape, results[shape], file=sys.stderr)
    report = {"benchmark": "ultrag_neural latency: exact vs default (hybrid), interleaved",
              "graph": label, "nodes": kg.num_nodes, "edges": kg.num_edges,
              "threads": args.threads,
              "command": f"python benchmarks/ultrag_neural.py latency --dataset {args.dataset} "
                         f"--queries {args.queries} --threads {args.threads} --executor compare "
                         f"--reps {args.reps}",
              **machine(), "results": results, "load_average_end": list(os.getloadavg())}
    write(report, args.out or RESULTS / f"ultrag_hybrid_latency_{args.dataset}_compare.json")
    return report


def write(report: dict, path: Path | str) -> None:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(stamp(report), indent=1) + "\n")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    inc = sub.add_parser("incomplete")
    inc.add_argument("--limit", type=int, default=300)
    inc.add_argument("--only", nargs="*", help="dataset names (PQ-2H, MetaQA-1hop, ...)")
    inc.add_argument("--subgraph-k", type=int, default=None,
                     help="neural on the SEPPR top-k subgraph of graphs with more nodes")
    lat = sub.add_parser("latency")
    lat.add_argument("--dataset", choices=("metaqa", "synthetic"), default="metaqa")
    lat.add_argument("--edges", type=int, default=10_000_000)
    lat.add_argument("--queries", type=int, default=30)
    lat.add_argument("--subgraph-k", type=int, default=None)
    lat.add_argument("--executor", choices=(*KINDS, "compare"), default="neural",
                     help="compare: symbolic and hybrid interleaved in one process")
    lat.add_argument("--reps", type=int, default=5, help="passes over the queries (compare)")
    lat.add_argument("--passes", type=int, default=1,
                     help="passes over the queries (neural and other single executors): the "
                          "first is reported as 'results' (caches filling), the last as "
                          "'results_warm' (caches filled)")
    for p in (inc, lat):
        p.add_argument("--seed", type=int, default=0)
        p.add_argument("--threads", type=int, default=1)
        p.add_argument("--out", default=None)
    args = parser.parse_args(argv)
    if getattr(args, "passes", 1) < 1:
        parser.error("--passes must be at least 1")
    import torch

    torch.set_num_threads(args.threads)
    report = incomplete(args) if args.command == "incomplete" else latency(args)
    print(json.dumps({k: v for k, v in report.items() if k != "datasets"}, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
