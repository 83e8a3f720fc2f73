"""Methods on a FalkorDB graph whose node vectors live in the database (issue 27), at scale.

1. A seeded synthetic power-law graph (``benchmarks/synthetic.py``; 1M edges -> 250k nodes) is
   written as a TSV and loaded with ``kgrag load-db --embed`` (timed; resumable, so a re-run
   only checks). The "embedder" is :mod:`hash_embedder` (random unit vectors seeded by each
   text; ``--dim``, default 64): the benchmark measures search and matching, not an encoder.
2. Each method runs in its own child process (so its peak RSS is its own): open the store,
   build the method, answer ``--questions`` sampled questions. Reported per method: client peak
   RSS (``VmHWM``), cold start (store opened -> first answer), median per-question latency.
   - SimGRAG: ``retrieve_pattern([(h, relation words, "UNKNOWN 1")])`` (node candidates from the
     database's vector index, k(n)=16);
   - ByoKG-RAG: ``TripletScorer.top_k`` over the 2-hop neighbourhood of ``h`` (stored vectors
     fetched by name);
   - GraphRAFT: its ranking step, ``_similarities`` of the question to the names one hop from
     ``h`` (stored vectors fetched by name), after linking ``h`` through the vector index.
3. Agreement with the in-memory computation on the same graph and embedder (in the parent):
   SimGRAG's vector-index recall@16 against exact search and identical best GSD; ByoKG-RAG's
   top-k triples and GraphRAFT's similarities equal to the in-memory ones.

    flock /work/bench.lock python benchmarks/db_vectors_scale.py --edges 1000000 \
        --out benchmarks/results/db_vectors_1M.json
"""

from __future__ import annotations

import argparse
import json
import os
import random
import resource
import statistics
import subprocess
import sys
import time
from typing import Any

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(ROOT, "tests"))

CACHE_DIR = os.path.join(HERE, ".cache")
GRAPH_KEY = "dbvec"
METHODS = ("simgrag", "byokg", "graphraft", "ultrag", "ultrag-neural")


def _questions(tsv: str, n: int, seed: int) -> list[tuple[str, str, str]]:
    from kgrag.graph.io import iter_triples

    # the same draws as indexing a list of every triple, without holding 10M of them: this
    # process's memory would show up in its children's peak RSS (see _peak_rss_mb)
    count = sum(1 for _ in iter_triples(tsv))
    rng = random.Random(seed)
    picks = [rng.randrange(count) for _ in range(n)]
    wanted = set(picks)
    found = {i: tuple(t) for i, t in enumerate(iter_triples(tsv)) if i in wanted}
    return [found[i] for i in picks]  # type: ignore[misc]


def _peak_rss_mb() -> float:
    """This process's peak resident memory since it started its program, in MB.

    ``ru_maxrss`` survives ``exec``: a child forked from a parent holding gigabytes reports
    the parent's size. The kernel's ``VmHWM`` belongs to the new program's memory alone."""
    try:
        with open("/proc/self/status", encoding="ascii") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def kept_recall(store: Any, index: str, vectors: Any, row_of: Any, q: Any,
                breadth: int) -> tuple[float, float]:
    """``(recall@16, seconds)``: of the 16 exact nearest rows of ``vectors`` to ``q``, the share
    SimGRAG keeps from the database -- the index's best 16 x OVERSAMPLE of a ``breadth``-wide
    search, re-ranked exactly, best 16 -- and the time of that one index query. ``row_of``
    maps a node name to its row of ``vectors``."""
    import numpy as np

    from kgrag.methods.simgrag.db_candidates import OVERSAMPLE

    exact = set(np.argsort(-(vectors @ q), kind="stable")[:16].tolist())
    started = time.perf_counter()
    hits = store.vector_search(index, q.tolist(), 16 * OVERSAMPLE, breadth=breadth)
    seconds = time.perf_counter() - started
    kept = sorted((row_of[n] for n, _ in hits), key=lambda i: (-float(vectors[i] @ q), i))
    return len(exact & set(kept[:16])) / 16, seconds


def _open(port: int) -> Any:
    from kgrag.graph.cypher.falkordb import FalkorDBGraphStore

    return FalkorDBGraphStore.from_url("127.0.0.1", port, graph=GRAPH_KEY)


def child(method: str, port: int, questions: list[list[str]], dim: int,
          breadth: int | None = None) -> dict[str, Any]:
    """One method in this process: cold start, per-question latency, peak RSS, its results."""
    import numpy as np
    from hash_embedder import HashUnitEmbedder

    from kgrag.text.names import relation_words

    emb = HashUnitEmbedder(dim)
    started = time.perf_counter()
    store = _open(port)
    out: list[Any] = []
    times: list[float] = []
    if method == "simgrag":
        from kgrag.methods.simgrag import SimGRAG

        options: dict[str, Any] = {"database_search_breadth": breadth} if breadth else {}
        m: Any = SimGRAG(store, embedder=emb, top_k=3, **options)
        for h, r, _ in questions:
            t0 = time.perf_counter()
            res = m.retrieve_pattern([(h, relation_words(r), "UNKNOWN 1")])
            times.append(time.perf_counter() - t0)
            cands = res.metadata["candidates"]
            out.append({"gsd": [round(s.metadata["gsd"], 5) for s in res.items],
                        "top_node": cands.get(h, [[None]])[0][0] if cands.get(h) != "*" else None})
    elif method == "byokg":
        from kgrag.methods.byokg.triplets import TripletScorer

        m = TripletScorer.from_graph(store, emb)
        for h, r, _ in questions:
            t0 = time.perf_counter()
            top = m.top_k(f"{relation_words(r)} of {h}", k=10, seeds=[h])
            times.append(time.perf_counter() - t0)
            out.append([[t.head, t.relation, t.tail, round(float(t.score), 5)] for t in top])
    elif method.startswith("ultrag"):
        from kgrag.methods.ultrag import UltRAG

        # the default executor (exact first: the projection runs in the database) or the
        # neural one (UltraQuery on the SEPPR subgraph fetched around the leaf)
        m = UltRAG(store, embedder=emb, linking="exact",
                   executor="neural" if method == "ultrag-neural" else None)
        for h, r, _ in questions:
            t0 = time.perf_counter()
            execution = m.run(_ultrag_query(h, r))
            ranked = m.ranked(execution.scores, 10, execution.names)
            times.append(time.perf_counter() - t0)
            out.append(_ultrag_result(execution.scores, execution.names, ranked))
    else:
        from kgrag.methods.graphraft import GraphRAFT

        m = GraphRAFT(store, embedder=emb)
        for h, r, _ in questions:
            t0 = time.perf_counter()
            linked = m.link([h])
            names = sorted({x for t in store.one_hop(linked[:1]) for x in (t.head, t.tail)})
            qvec = np.asarray(emb.embed_query(f"{relation_words(r)} of {h}"), np.float32)
            sims = m._similarities(qvec, names)
            times.append(time.perf_counter() - t0)
            out.append({"linked": linked[:1], "names": names,
                        "sims": [round(float(s), 5) for s in sims]})
    cold = time.perf_counter() - started - sum(times[1:])
    store.close()
    rss_mb = _peak_rss_mb()
    return {"method": method, "cold_start_s": round(cold, 3),
            "median_question_s": round(statistics.median(times), 4),
            "questions": len(times), "peak_rss_mb": round(rss_mb, 1), "results": out}


def _ultrag_query(head: str, relation: str) -> str:
    """The 1-hop projection of a sampled edge, its entity a quoted mention (resolved by name:
    ``linking="exact"``, so both runs start from the same leaf; the database's dense linking is
    measured in ``bench_db_linking.py``)."""
    return f'"{head}" -> "{relation}"'


def _ultrag_result(scores: Any, names: Any, ranked: Any) -> dict[str, Any]:
    """The top 10 (name, score) and every proved answer: the default executor's answers above
    EXACT_TIER, compared as a set (equal scores are ordered by node id in memory and by the
    database's order on a store, so a top 10 cut from more tied answers may differ).
    ``names[i]`` names ``scores[i]``."""
    import numpy as np

    from kgrag.methods.ultrag.graph_executors import EXACT_TIER

    proved = sorted(names[i] for i in np.flatnonzero(np.asarray(scores) > EXACT_TIER).tolist())
    return {"top10": [[e.name, round(float(e.score), 4)] for e in ranked], "proved": proved}


def _agreement(method: str, got: dict[str, Any], questions: list[list[str]], kg: Any,
               vectors: Any, emb: Any, store: Any, breadth: int | None = None
               ) -> dict[str, Any]:
    """Compare a child's results with the in-memory computation on the same graph."""
    import numpy as np

    from kgrag.text.names import relation_words

    if method == "simgrag":
        from kgrag.graph.cypher.vectors import node_vector_index
        from kgrag.methods.simgrag import SimGRAG

        # exact search in memory (above 1M names "auto" would build an HNSW index: 25 min
        # at 2.4M names, and approximate)
        mem = SimGRAG(kg, embedder=emb, top_k=3, node_vectors=vectors, index="flat")
        index = node_vector_index(store, emb)
        from kgrag.methods.simgrag.db_candidates import auto_breadth

        breadth = breadth or auto_breadth(store.stored_node_count())  # SimGRAG's default

        recalls, raw_recalls, same_gsd = [], [], 0
        for (h, r, _), res in zip(questions, got["results"]):
            q = np.asarray(emb.embed_query(h), np.float32)
            recalls.append(kept_recall(store, index.index, vectors, kg.node_index, q,
                                       breadth)[0])
            exact = set(np.argsort(-(vectors @ q), kind="stable")[:16].tolist())
            raw = {kg.node_index[n] for n, _ in store.vector_search(index.index, q.tolist(), 16)}
            raw_recalls.append(len(exact & raw) / 16)
            m = mem.retrieve_pattern([(h, relation_words(r), "UNKNOWN 1")])
            same_gsd += [round(s.metadata["gsd"], 5) for s in m.items] == res["gsd"]
        return {"recall_at_16_mean": round(statistics.mean(recalls), 4),
                "recall_at_16_min": min(recalls), "same_gsds": same_gsd,
                "index_only_recall_at_16_mean": round(statistics.mean(raw_recalls), 4),
                "search_breadth": breadth}
    if method == "byokg":
        from kgrag.methods.byokg.triplets import TripletScorer

        mem = TripletScorer(kg, emb, node_vectors=vectors,
                            relation_vectors=TripletScorer.from_graph(kg, emb).relation_vectors)
        same = 0
        for (h, r, _), res in zip(questions, got["results"]):
            qvec = mem.query_vector(f"{relation_words(r)} of {h}")
            cands = kg.k_hop_subgraph([h], hops=2)
            from kgrag.methods.byokg.triplets import rank_triples

            top = rank_triples(cands, mem.score_triples(qvec, cands), 10)
            same += [[t.head, t.relation, t.tail, round(float(t.score), 5)] for t in top] == res
        return {"same_top10": same}
    if method.startswith("ultrag"):
        from kgrag.methods.ultrag import UltRAG

        mem = UltRAG(kg, embedder=emb, linking="exact",
                     executor="neural" if method == "ultrag-neural" else None)
        same_top = same_proved = 0
        for (h, r, _), res in zip(questions, got["results"]):
            execution = mem.run(_ultrag_query(h, r))
            ranked = mem.ranked(execution.scores, 10, execution.names)
            mine = _ultrag_result(execution.scores, kg.node_names, ranked)  # scores by id
            same_top += mine["top10"] == res["top10"]
            same_proved += mine["proved"] == res["proved"]
        return {"same_top10": same_top, "same_proved_answers": same_proved}
    same = 0
    for (h, r, _), res in zip(questions, got["results"]):
        qvec = np.asarray(emb.embed_query(f"{relation_words(r)} of {h}"), np.float32)
        ids = [kg.node_index[n] for n in res["names"]]
        sims = [round(float(s), 5) for s in vectors[ids] @ qvec]
        same += res["linked"] == [h] and sims == res["sims"]
    return {"same_similarities": same}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--edges", type=int, default=1_000_000)
    ap.add_argument("--dim", type=int, default=64)
    ap.add_argument("--questions", type=int, default=20)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--port", type=int, help="a running FalkorDB (default: start one)")
    ap.add_argument("--ef-construction", type=int, default=None,
                    help="the vector index's efConstruction (load-db --ef-construction; default: "
                         "FalkorDB's 200). 50 builds about 2x faster (10M-edge runs)")
    ap.add_argument("--child-timeout", type=float, default=3600.0,
                    help="seconds one method's process may take (then reported as failed)")
    ap.add_argument("--skip-memory", action="store_true", help="no in-memory agreement check")
    ap.add_argument("--simgrag-breadth", type=int, default=None,
                    help="SimGRAG's database_search_breadth (default: the library's, 2,048)")
    ap.add_argument("--no-index-check", action="store_true",
                    help="a graph already loaded is used as it is (index-db reads every node "
                         "to find missing vectors: minutes at 10M edges)")
    ap.add_argument("--methods", default=",".join(METHODS),
                    help=f"comma-separated subset of {','.join(METHODS)}")
    ap.add_argument("--child", help=argparse.SUPPRESS)
    ap.add_argument("--out", default=os.path.join(HERE, "results", "db_vectors_1M.json"))
    args = ap.parse_args(argv)
    if args.child:
        spec = json.loads(sys.stdin.read())
        print(json.dumps(child(args.child, args.port, spec["questions"], args.dim,
                               spec.get("breadth"))))
        return 0

    import synthetic
    from machine_info import stamp

    os.makedirs(CACHE_DIR, exist_ok=True)
    tsv = os.path.join(CACHE_DIR, f"dbvec_{args.edges}_{args.seed}.tsv")
    if not os.path.exists(tsv):
        g = synthetic.generate(args.edges, seed=args.seed)
        nodes, relations = g.node_names(), g.relation_names()
        with open(tsv + ".tmp", "w", encoding="utf-8") as f:
            for h, r, t in zip(g.heads.tolist(), g.rels.tolist(), g.tails.tolist()):
                f.write(f"{nodes[h]}\t{relations[r]}\t{nodes[t]}\n")
        os.replace(tsv + ".tmp", tsv)
    server = None
    port = args.port
    if port is None:
        from db_server import FalkorDBServer

        server = FalkorDBServer().start()
        port = server.port
    report: dict[str, Any] = {"edges": args.edges, "dim": args.dim, "questions": args.questions,
                              "simgrag_breadth": args.simgrag_breadth,
                              "ef_construction": args.ef_construction or 200,
                              "load_average_start": os.getloadavg()}
    env = dict(os.environ, KGRAG_HASH_DIM=str(args.dim))
    try:
        from kgrag.errors import GraphDatabaseError

        probe = _open(port)
        try:
            loaded = probe._read("MATCH ()-[e]->() RETURN count(e)")[0][0] >= args.edges
        except GraphDatabaseError:  # a fresh server: the graph key does not exist yet
            loaded = False
        probe.close()
        # a graph already loaded (a run cut short) is only embedded: index-db resumes
        command = (["index-db"] if loaded else ["load-db", tsv, "--sep", "tab",
                                                "--batch-size", "10000", "--embed"])
        t0 = time.perf_counter()
        if loaded and args.no_index_check:
            command = ["none (--no-index-check)"]
        else:
            subprocess.run([sys.executable, "-m", "kgrag.cli", *command, "--backend",
                            "falkordb", "--port", str(port), "--host", "127.0.0.1", "--graph",
                            GRAPH_KEY, "--embedder",
                            os.path.join(HERE, "hash_embedder.py") + ":embedder",
                            "--embed-batch-size", "2000", "--no-progress",
                            *(["--ef-construction", str(args.ef_construction)]
                              if args.ef_construction else [])], check=True, env=env)
        report["load_embed_seconds" if not loaded else "embed_seconds"] = round(
            time.perf_counter() - t0, 1)
        report["load_command"] = command[0]
        questions = [list(q) for q in _questions(tsv, args.questions, args.seed)]
        methods = [m for m in args.methods.split(",") if m]
        if set(methods) - set(METHODS):
            ap.error(f"--methods: unknown {sorted(set(methods) - set(METHODS))}")
        runs: dict[str, dict[str, Any]] = {}
        for method in methods:
            # a method that fails (e.g. a server timeout at 10M edges) is reported as failed
            # with its last error line; the other methods still run
            try:
                proc = subprocess.run(
                    [sys.executable, os.path.abspath(__file__), "--child", method, "--port",
                     str(port), "--dim", str(args.dim)],
                    input=json.dumps({"questions": questions, "breadth": args.simgrag_breadth}),
                    capture_output=True, text=True, env=env, timeout=args.child_timeout)
            except subprocess.TimeoutExpired:
                runs[method] = {"method": method, "failed": f"no answer in {args.child_timeout} s"}
            else:
                if proc.returncode:
                    lines = proc.stderr.strip().splitlines() or ["(no output)"]
                    print(proc.stderr[-3000:], file=sys.stderr)
                    runs[method] = {"method": method, "failed": lines[-1]}
                else:
                    runs[method] = json.loads(proc.stdout.strip().splitlines()[-1])
            print(json.dumps({k: v for k, v in runs[method].items() if k != "results"}),
                  flush=True)
        if not args.skip_memory:
            from hash_embedder import HashUnitEmbedder

            from kgrag import KnowledgeGraph
            from kgrag.graph.io import iter_triples

            emb = HashUnitEmbedder(args.dim)
            kg = KnowledgeGraph.from_triples(iter_triples(tsv, sep="\t"))
            vectors = emb.embed_documents(kg.node_names)
            store = _open(port)
            for method in (m for m in methods if "failed" not in runs[m]):
                runs[method]["agreement"] = _agreement(method, runs[method], questions, kg,
                                                       vectors, emb, store,
                                                       args.simgrag_breadth)
            store.close()
        for run in runs.values():
            run.pop("results", None)
        report["methods"] = runs
        report["load_average_end"] = os.getloadavg()
    finally:
        if server is not None:
            server.stop()
    stamp(report)
    os.makedirs(os.path.dirname(args.out), exist_ok=True)
    with open(args.out, "w", encoding="utf-8") as f:
        json.dump(report, f, indent=2)
    print(json.dumps(report, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
