"""Where ByoKG-RAG's database ranking spends its time, per question and per store call.

Runs ``TripletScorer.top_k`` (k=10, 2 hops) on a FalkorDB graph loaded by
``db_vectors_scale.py`` (the same seeded questions: a sampled edge's head, the relation's words
"of" the head), with every store call it makes timed: the pair-ranking passes
(``best_pairs``: limit or threshold, typed or not, rows returned), the relation reads of
untyped pairs (``pair_relations``), the neighbourhood's names. ``--typed`` sets
``database_typed_relations`` (repeat it to compare; 0 ranks every relation in one untyped
pass, as before typed passes existed). The top 10 of every setting must be identical.

    python benchmarks/db_vectors_scale.py --edges 1000000 --port 27211 --methods byokg
    python benchmarks/byokg_db_passes.py --port 27211 --edges 1000000 --questions 30 \\
        --typed 0 --typed 8 --out benchmarks/results/byokg_db_passes_1M.json
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from typing import Any

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "tests"))

# count_pairs_without_vectors: only in kgrag before 2026-11-28 (the before/after comparison)
TIMED = ("best_pairs", "best_triples", "pair_relations", "grouped_pair_relations",
         "existing_nodes", "neighbour_names", "list_relations", "count_pairs_without_vectors")


def _rows(result: Any) -> int:
    if isinstance(result, int):
        return result
    return len(result[0]) if isinstance(result, tuple) else len(result)


def run(port: int, edges: int, questions: int, typed: int) -> dict[str, Any]:
    from db_vectors_scale import GRAPH_KEY, _open, _questions
    from hash_embedder import HashUnitEmbedder

    from kgrag.methods.byokg.triplets import TripletScorer
    from kgrag.text.names import relation_words

    tsv = os.path.join(HERE, ".cache", f"{GRAPH_KEY}_{edges}_0.tsv")
    asked = _questions(tsv, questions, 0)
    store = _open(port)
    calls: list[dict[str, Any]] = []
    for name in (n for n in TIMED if hasattr(store, n)):
        original = getattr(store, name)

        def timed(*args: Any, _call: Any = original, _name: str = name, **kwargs: Any) -> Any:
            started = time.perf_counter()
            result = _call(*args, **kwargs)
            calls.append({"call": _name, "s": round(time.perf_counter() - started, 4),
                          "rows": _rows(result), **{k: v for k, v in kwargs.items()
                                                     if k in ("limit", "threshold", "relation")}})
            return result

        setattr(store, name, timed)
    scorer = TripletScorer.from_graph(store, HashUnitEmbedder(64))
    scorer.database_typed_relations = typed
    per_question = []
    for head, relation, _ in asked:
        calls.clear()
        started = time.perf_counter()
        top = scorer.top_k(f"{relation_words(relation)} of {head}", k=10, seeds=[head])
        seconds = time.perf_counter() - started
        per_question.append({"seed": head, "s": round(seconds, 4), "calls": list(calls),
                             "top10": [[t.head, t.relation, t.tail, round(float(t.score), 5)]
                                       for t in top]})
    store.close()
    # the first question also reads the relation list once (cached by the store)
    times = [q["s"] for q in per_question]
    return {"typed_relations": typed, "median_s": round(statistics.median(times), 4),
            "mean_s": round(statistics.mean(times), 4), "max_s": max(times),
            "questions": per_question}


def main() -> None:
    from machine_info import machine_info

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--port", type=int, required=True, help="FalkorDB loaded by db_vectors_scale")
    ap.add_argument("--edges", type=int, default=1_000_000)
    ap.add_argument("--questions", type=int, default=30)
    ap.add_argument("--typed", type=int, action="append", help="database_typed_relations")
    ap.add_argument("--out", default=os.path.join(HERE, "results", "byokg_db_passes_1M.json"))
    args = ap.parse_args()
    runs = [run(args.port, args.edges, args.questions, t) for t in (args.typed or [8])]
    same = all(r["questions"][i]["top10"] == runs[0]["questions"][i]["top10"]
               for r in runs for i in range(len(r["questions"])))
    for r in runs:
        print(f"typed {r['typed_relations']}: median {r['median_s']} s, mean {r['mean_s']} s, "
              f"max {r['max_s']} s")
    print("identical top 10 across settings:", same)
    report = {"edges": args.edges, "questions": args.questions, "identical_top10": same,
              "runs": runs, "machine": machine_info(),
              "command": "python benchmarks/byokg_db_passes.py " + " ".join(sys.argv[1:])}
    os.makedirs(os.path.dirname(args.out), exist_ok=True)
    with open(args.out, "w", encoding="utf-8") as f:
        json.dump(report, f, indent=1)
    if not same:
        raise SystemExit("the settings disagree on a top 10")


if __name__ == "__main__":
    main()
