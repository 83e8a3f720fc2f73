"""UltRAG oracle-query recall on PathQuestion and MetaQA (the executor given perfect queries).

Each question's gold relation path (PathQuestion's annotation; MetaQA's question type) becomes the
DSL query a perfect LLM would write from the topic entity, e.g. MetaQA
``actor_to_movie_to_director`` for ``[John Krasinski]`` -> ``Q812 -> P0_inv -> P3``. The symbolic
executor runs it over the whole KG and we score the gold answers in the resulting ranking:
MRR, Hits@1 and Hits@10 with exact expected values under random tie-breaking
(:func:`kgrag.eval.ranking.tie_aware_metrics`), in the filtered setting (the topic entity is
removed from the ranking unless it is an answer). This mirrors the paper's Table 6 ("ground-truth
queries"), with the symbolic instead of the neural executor. ``answers_*`` are the answer-set
Hits / precision / recall / F1 of the LLM-free margin arbitrator over the top 50 entities
(the paper's answer-set metrics, with the margin arbitrator standing in for the LLM).

Usage::

    python benchmarks/ultrag_oracle.py                   # all questions, all datasets
    python benchmarks/ultrag_oracle.py --limit 500       # a seeded sample per dataset
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import time
from collections import defaultdict
from pathlib import Path

import numpy as np
from machine_info import stamp

from kgrag import KnowledgeGraph
from kgrag.eval import load_metaqa, load_pathquestion
from kgrag.eval.ranking import answer_set_metrics, tie_aware_metrics
from kgrag.graph import read_triples
from kgrag.graph.memory import normalize_name
from kgrag.methods.ultrag import MarginArbitrator, SymbolicFuzzyExecutor, parse_query
from kgrag.methods.ultrag.executor import one_hot, top_k

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT.parent / "shared" / "data"
RESULTS = ROOT / "benchmarks" / "results" / "ultrag_oracle.json"

PATHQUESTION = [("PQ-2H", "PQ-2H.txt", "2H-kb.txt"), ("PQ-3H", "PQ-3H.txt", "3H-kb.txt"),
                ("PQL-2H", "PQL-2H.txt", "PQL2-KB.txt"), ("PQL-3H", "PQL-3H.txt", "PQL3-KB.txt"),
                ("PQL-3H_more", "PQL-3H_more.txt", "PQL3-KB.txt")]


def oracle_query(kg: KnowledgeGraph, topic: int, steps) -> str:
    """The DSL a perfect LLM would write: the topic's id projected along the gold path."""
    text = f"Q{topic}"
    for step in steps:
        text += f" -> P{kg.relation_index[step.relation]}" + ("_inv" if step.direction == "in"
                                                              else "")
    return text


def evaluate(name: str, kg: KnowledgeGraph, examples, progress_every: int = 2000) -> dict:
    executor = SymbolicFuzzyExecutor(kg)
    arbitrator = MarginArbitrator(margin=0.05, max_answers=50)
    totals: dict[str, list[float]] = defaultdict(list)
    by_type: dict[str, dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
    times_ms = []
    skipped = missing_gold = 0
    for i, ex in enumerate(examples):
        topic = kg.node_index.get(normalize_name(ex.entities[0])) if ex.entities else None
        if topic is None or not ex.relation_path:
            skipped += 1
            continue
        query = parse_query(oracle_query(kg, topic, ex.relation_path))
        start = time.perf_counter()
        scores = executor.execute(query, [one_hot([topic], kg.num_nodes)])
        times_ms.append((time.perf_counter() - start) * 1000)
        gold = [kg.node_index[a] for a in map(normalize_name, ex.answers) if a in kg.node_index]
        if len(gold) < len(ex.answers):
            missing_gold += 1
        metrics = tie_aware_metrics(scores, gold, ks=(1, 10),
                                    exclude=[] if topic in gold else [topic])
        # LLM-free end to end: the margin arbitrator over the top 50 (topic removed)
        if topic not in gold:
            scores[topic] = 0
        ids, values = top_k(scores, 50)
        answers = arbitrator.arbitrate(ex.question, "", [(str(i), kg.node_names[i], float(v))
                                                         for i, v in zip(ids, values)])
        for key, value in answer_set_metrics(answers, [kg.node_names[g] for g in gold]).items():
            metrics[f"answers_{key}"] = value
        for key, value in metrics.items():
            totals[key].append(value)
            by_type[ex.qtype][key].append(value)
        if progress_every and (i + 1) % progress_every == 0:
            print(f"  {name}: {i + 1}/{len(examples)}", file=sys.stderr)
    summary = {key: round(100 * float(np.mean(vals)), 2) for key, vals in totals.items()}
    return {
        "dataset": name,
        "questions": len(examples),
        "evaluated": len(totals["mrr"]),
        "skipped_no_topic_or_path": skipped,
        "questions_with_gold_not_in_kb": missing_gold,
        **summary,
        "median_execute_ms": round(statistics.median(times_ms), 3) if times_ms else None,
        "by_type": {t: {"n": len(v["mrr"]),
                        **{k: round(100 * float(np.mean(x)), 2) for k, x in v.items()}}
                    for t, v in sorted(by_type.items())},
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--limit", type=int, default=None, help="seeded sample per dataset")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", default=str(RESULTS))
    args = parser.parse_args(argv)
    runs = []
    for name, questions, kb in PATHQUESTION:
        kg = read_triples(DATA / "pathquestion" / kb, sep="\t", header=False)
        examples = load_pathquestion(DATA / "pathquestion" / questions, limit=args.limit,
                                     seed=args.seed)
        runs.append(evaluate(name, kg, examples))
        print(json.dumps({k: v for k, v in runs[-1].items() if k != "by_type"}), file=sys.stderr)
    metaqa_kg = read_triples(DATA / "metaqa" / "kb_reconstructed.txt", sep="|",
                                        header=False)
    for hop in (1, 2, 3):
        examples = load_metaqa(DATA / "metaqa", hop, limit=args.limit, seed=args.seed)
        runs.append(evaluate(f"MetaQA-{hop}hop", metaqa_kg, examples))
        print(json.dumps({k: v for k, v in runs[-1].items() if k != "by_type"}), file=sys.stderr)
    report = {
        "benchmark": "ultrag_oracle",
        "description": "symbolic executor on gold-path DSL queries; tie-aware expected MRR / "
                       "Hits@k (%), filtered (topic removed unless gold)",
        "command": "python benchmarks/ultrag_oracle.py" + (f" --limit {args.limit}"
                                                           if args.limit else ""),
        "machine": f"{platform.machine()}, {os.cpu_count()} cores, Python "
                   f"{platform.python_version()}",
        "runs": runs,
    }
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(stamp(report), indent=2) + "\n", encoding="utf-8")
    print(f"wrote {args.out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
