"""Relation wording: oracle retrieval when relations are written as a person writes them.

PathQuestion's KBs name relations by identifier: ``place_of_birth`` (PQ, 13 relations) and
Freebase paths ``__people__person__place_of_birth`` (PQ-L, 363 / 411 relations). A person or an
LLM writes the property, "place of birth". For each question the gold relation path becomes the
artifact a perfect LLM would write, with each relation phrased two ways:

* ``identifier`` -- the whole identifier in words ("people person place of birth"), what the
  existing oracles write;
* ``words`` -- its last segment in words ("place of birth"), as a person would.

Methods (each through its own LLM-free entry point):

* **SimGRAG** -- the oracle pattern (:func:`kgrag.eval.oracles.simgrag_pattern`) with k = 10
  subgraphs. ``before``: one text per relation (the whole id in words) and k(r) = 16, the
  defaults before :mod:`kgrag.text.relations`; ``after``: every text of
  :func:`~kgrag.text.relations.relation_texts` (best match) and k(r) = "auto" -- each under
  ``injective=True`` and ``"prefer"``; in between, each change alone, and the last segment
  alone as the only text (``SIMGRAG_SETTINGS``).
* **UltRAG** -- the DSL ``Q<topic> -> "<relation>" -> ...`` run by the symbolic executor
  (``executor="symbolic"``, as benchmarks/ultrag_oracle.py), top 10.
  ``before``: relation tokens must be graph relation names (the lexical back-off at 85 is the
  only help); ``after``: relations bound by their words
  (:meth:`~kgrag.methods.ultrag.vocabulary.GraphVocabulary.expand_written_relations`).
* **ByoKG-RAG** -- Follow-Paths of the metapath ``r1 -> r2`` written in words from the topic
  entity (the step a perfect KG-Linker output drives). ``before``: the resolver of names and
  their case/punctuation keys; ``after``: plus relation words
  (:class:`~kgrag.linking.relation_names.RelationTextIndex`). The walk ends are unranked, so
  Hits@1 is not defined; reported: Hits@all (a gold answer among the ends) and answer recall.

Metrics per (dataset, method, setting): Hits@1, Hits@10, answer recall (share of gold answers
among the top 10), ``empty`` (share of questions with nothing retrieved) and ``empty_gold``
(the same among questions whose gold path exists in the KB -- always all of them here, checked).

Usage::

    python benchmarks/relation_wording.py --limit 300     # seeded sample per dataset
    python benchmarks/relation_wording.py --table benchmarks/results/relation_wording.json
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import time
from pathlib import Path

from machine_info import stamp

from kgrag.graph import read_triples

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT.parent / "shared" / "data" / "pathquestion"
CACHE = ROOT / "benchmarks" / ".cache"
RESULTS = ROOT / "benchmarks" / "results" / "relation_wording.json"

DATASETS = [("PQ-2H", "PQ-2H.txt", "2H-kb.txt"), ("PQ-3H", "PQ-3H.txt", "3H-kb.txt"),
            ("PQL-2H", "PQL-2H.txt", "PQL2-KB.txt"), ("PQL-3H", "PQL-3H.txt", "PQL3-KB.txt")]


#: (relation texts, k(r), injective): before = ("whole", 16, ...); after = ("both", "auto", ...);
#: the middle rows separate the two changes.
SIMGRAG_SETTINGS = [("whole", 16, True), ("whole", 16, "prefer"), ("last", 16, "prefer"),
                    ("both", 16, "prefer"), ("whole", "auto", "prefer"),
                    ("both", "auto", True), ("both", "auto", "prefer")]


def phrase(relation: str, wording: str) -> str:
    from kgrag.text.names import relation_words
    from kgrag.text.relations import identifier_texts

    return identifier_texts(relation)[0] if wording == "words" else relation_words(relation)


def with_wording(ex, wording: str):
    """The example with its gold relations renamed to how the oracle writes them (the phrase
    table of :mod:`kgrag.eval.oracles` then only adds spaces)."""
    from dataclasses import replace

    from kgrag.graph.base import PathStep

    return replace(ex, relation_path=tuple(PathStep(phrase(s.relation, wording), s.direction)
                                           for s in ex.relation_path))


def scores(answers: list[str], gold: set[str], n_gold: int) -> dict[str, float]:
    top = [a.lower() for a in answers]
    found = gold & set(top[:10])
    return {"hits@1": float(bool(top) and top[0] in gold), "hits@10": float(bool(found)),
            "recall": len(found) / max(n_gold, 1), "empty": float(not top)}


def summarize(rows: list[dict[str, float]], seconds: list[float]) -> dict[str, float]:
    n = len(rows)
    out = {key: round(100 * sum(r[key] for r in rows) / n, 2)
           for key in ("hits@1", "hits@10", "recall", "empty")}
    out["ms_median"] = round(1000 * statistics.median(seconds), 2)
    return out


# ---------------------------------------------------------------------- SimGRAG
def run_simgrag(kg, examples, embedder, node_vectors, texts: str, k_relations,
                injective) -> dict:
    """``texts``: "whole" (the whole id in words: the behaviour before relation_texts), "last"
    (its last segment only) or "both" (relation_texts: best of the two)."""
    from kgrag.eval.oracles import simgrag_pattern
    from kgrag.methods.simgrag import SimGRAG
    from kgrag.methods.simgrag.candidates import CandidateGenerator
    from kgrag.text.names import relation_words
    from kgrag.text.relations import identifier_texts

    sim = SimGRAG(kg, embedder=embedder, top_k=10, node_vectors=node_vectors, injective=injective,
                  relation_top_k=k_relations)
    if texts != "both":
        chosen = [[relation_words(r)] if texts == "whole" else [identifier_texts(r)[0]]
                  for r in kg.relation_names]
        sim.candidates = CandidateGenerator(kg.node_names, kg.relation_names, embedder,
                                            k_relations=k_relations, node_vectors=node_vectors,
                                            relation_texts=chosen)
    out = {}
    for wording in ("identifier", "words"):
        rows, secs = [], []
        for ex in examples:
            triples, answer_node = simgrag_pattern(with_wording(ex, wording))
            t0 = time.perf_counter()
            result = sim.retrieve_pattern(triples, ex.question)
            secs.append(time.perf_counter() - t0)
            answers = list(dict.fromkeys(s.metadata["mapping"].get(answer_node, "")
                                         for s in result.items))
            rows.append(scores(answers, {a.lower() for a in ex.answers}, len(ex.answers)))
        out[wording] = summarize(rows, secs)
    return out


# ---------------------------------------------------------------------- UltRAG
def run_ultrag(kg, examples, setting: str) -> dict:
    from kgrag.errors import KgragError
    from kgrag.methods.ultrag import UltRAG
    from kgrag.methods.ultrag.query import quote

    ultrag = UltRAG(kg, linking="exact", top_k=10, executor="symbolic",
                    relation_backoff=85 if setting == "before" else None)
    if setting == "before":
        ultrag.vocabulary.relation_texts = None  # no relation words: names, ids, back-off only
    out = {}
    for wording in ("ids", "identifier", "words"):
        rows, secs = [], []
        for ex in examples:
            topic = kg.node_index[ex.entities[0]]
            text = f"Q{topic}"
            for step in ex.relation_path:
                rel = (f"P{kg.relation_index[step.relation]}" if wording == "ids"
                       else quote(phrase(step.relation, wording)))
                text += f" -> {rel}" + ("_inv" if step.direction == "in" else "")
            t0 = time.perf_counter()
            try:
                answers = [e.name for e in ultrag.execute(text, top_k=10)]
            except (KgragError, ValueError):  # an unresolvable relation: nothing retrieved
                answers = []
            secs.append(time.perf_counter() - t0)
            rows.append(scores(answers, {a.lower() for a in ex.answers}, len(ex.answers)))
        out[wording] = summarize(rows, secs)
    return out


# ---------------------------------------------------------------------- ByoKG-RAG
def run_byokg(kg, examples, setting: str) -> dict:
    from kgrag.methods.byokg.paths import RelationResolver, follow_metapath

    resolver = (RelationResolver(kg.relation_names) if setting == "before"
                else RelationResolver.from_graph(kg))
    out = {}
    for wording in ("identifier", "words"):
        rows, secs = [], []
        for ex in examples:
            metapath = " -> ".join(phrase(s.relation, wording) for s in ex.relation_path)
            t0 = time.perf_counter()
            found = follow_metapath(kg, [ex.entities[0]], metapath, resolver=resolver,
                                    max_paths=200)
            secs.append(time.perf_counter() - t0)
            ends = [] if found.partial else list(dict.fromkeys(p.target for p in found.paths))
            gold = {a.lower() for a in ex.answers}
            hit = bool(gold & {e.lower() for e in ends})
            rows.append({"hits@1": float("nan"), "hits@10": float(hit),
                         "recall": len(gold & {e.lower() for e in ends}) / max(len(gold), 1),
                         "empty": float(not ends)})
        summary = summarize([{**r, "hits@1": 0.0} for r in rows], secs)
        summary.pop("hits@1")
        summary["hits@all"] = summary.pop("hits@10")
        out[wording] = summary
    return out


def gold_path_exists(kg, ex) -> bool:
    walks = kg.follow_path([ex.entities[0]], list(ex.relation_path))
    gold = {a.lower() for a in ex.answers}
    return any(p.target.lower() in gold for p in walks)


def markdown(report: dict) -> str:
    """The docs/results.md tables of a report."""
    lines = ["| dataset | method | setting | wording | Hits@1 | Hits@10 | answer recall | "
             "empty | ms (median) |", "|---|---|---|---|---:|---:|---:|---:|---:|"]
    for name, entry in report["datasets"].items():
        for method in ("simgrag", "ultrag", "byokg"):
            for setting, by_wording in entry.get(method, {}).items():
                for wording, m in by_wording.items():
                    hits1 = m.get("hits@1")
                    lines.append(
                        f"| {name} | {method} | {setting} | {wording} | "
                        f"{'–' if hits1 is None else hits1} | "
                        f"{m.get('hits@10', m.get('hits@all'))} | {m['recall']} | {m['empty']} | "
                        f"{m['ms_median']} |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--limit", type=int, default=300)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--only", default="simgrag,ultrag,byokg")
    parser.add_argument("--out", default=str(RESULTS))
    parser.add_argument("--table", metavar="JSON", help="print the markdown table of a result")
    args = parser.parse_args(argv)
    if args.table:
        print(markdown(json.loads(Path(args.table).read_text(encoding="utf-8"))))
        return 0
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    import numpy as np

    from kgrag.embed import CachedEmbedder, default_embedder
    from kgrag.eval.datasets import load_pathquestion

    sys.path.insert(0, str(ROOT / "benchmarks"))
    from simgrag_oracle_recall import MemoEmbedder

    methods = args.only.split(",")
    base = default_embedder()
    embedder = MemoEmbedder(base)
    started = time.perf_counter()
    report: dict = {"benchmark": "relation_wording", "limit": args.limit, "seed": args.seed,
                    "embedder": base.name, "load_before": os.getloadavg(),
                    "machine": {"python": platform.python_version(), "cpus": os.cpu_count(),
                                "shared": "yes: ~8 engineers on 2 cores"},
                    "datasets": {}}
    for label, questions, kb in DATASETS:
        kg = read_triples(DATA / kb, sep="\t", header=False)
        examples = [ex for ex in load_pathquestion(DATA / questions, limit=args.limit,
                                                   seed=args.seed)
                    if ex.entities[0] in kg.node_index]
        exists = sum(gold_path_exists(kg, ex) for ex in examples)
        entry: dict = {"relations": kg.num_relations, "questions": len(examples),
                       "gold_path_in_kb": exists}
        print(f"{label}: {kg!r}, {len(examples)} questions, gold path in KB: {exists}",
              file=sys.stderr, flush=True)
        if "simgrag" in methods:
            vectors = np.asarray(CachedEmbedder(base, CACHE / "embeddings", min_texts=500)
                                 .embed_documents(list(kg.node_names)), np.float32)
            entry["simgrag"] = {}
            for texts, k_r, injective in SIMGRAG_SETTINGS:
                key = f"texts={texts}/k_r={k_r}/injective={injective}"
                entry["simgrag"][key] = run_simgrag(kg, examples, embedder, vectors, texts, k_r,
                                                    injective)
                print(label, "simgrag", key, json.dumps(entry["simgrag"][key]),
                      file=sys.stderr, flush=True)
        if "ultrag" in methods:
            entry["ultrag"] = {s: run_ultrag(kg, examples, s) for s in ("before", "after")}
            print(label, "ultrag", json.dumps(entry["ultrag"]), file=sys.stderr, flush=True)
        if "byokg" in methods:
            entry["byokg"] = {s: run_byokg(kg, examples, s) for s in ("before", "after")}
            print(label, "byokg", json.dumps(entry["byokg"]), file=sys.stderr, flush=True)
        report["datasets"][label] = entry
    report["seconds_total"] = round(time.perf_counter() - started, 1)
    report["load_after"] = os.getloadavg()
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(stamp(report), indent=2) + "\n", encoding="utf-8")
    print(f"wrote {args.out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
