"""ByoKG-RAG retrieval recall on MetaQA with an oracle KG-Linker, and in LLM-free mode.

The oracle plays a perfect LLM: its KG-Linker reply names the gold topic entity (MetaQA marks it
``[like this]``) and the gold relation path of the question type, written plainly as an LLM
reading the schema would (``directed_by -> directed_by -> in_language``: no direction markers, so
the both-directions policy is exercised); in the agentic step it selects the gold relations and
then says FINISH; in iteration 2 it says FINISH. Everything else is the real pipeline at its
defaults: hybrid entity linking (top-3 fuzzy ∪ top-3 MiniLM), Follow-Paths with both directions,
text-based top-10 triplets over all 133k edges, agentic traversal, context de-duplication.

Reported per hop (seeded sample of ``--limit`` questions):

* ``answer_recall`` -- mean fraction of gold answers among the entities of the retrieved context
  (goal ≥ 0.99: the graph tools must not lose what a perfect LLM asked for);
* ``full_recall`` -- share of questions with every gold answer retrieved; ``hit`` -- any;
* ``llm_calls`` -- mean oracle calls per question (KG-Linker + agentic steps; no answer call);
* LLM-free mode (no LLM at all): the same recall over its context (2-hop walks, top-10 triplets,
  ranked candidates), plus ``candidate_hits_at_1`` (top-ranked candidate is a gold answer), with
  the question's ``[brackets]`` kept (MetaQA's given topic entity) and removed, and
  ``candidate_hits_at_1_by_qtype`` (the same per MetaQA question type, ``[hits, questions]``).

``--relation-names raw`` embeds the relation identifiers as they are (``directed_by``) instead of
as words (``directed by``, the default since :func:`kgrag.text.names.relation_words`), for the
before/after comparison in ``docs/byokg.md``; write such runs elsewhere with ``--out``.

Usage (from the repo root; name embeddings are cached under ``benchmarks/.cache/``)::

    python benchmarks/byokg_metaqa_recall.py --limit 300
    python benchmarks/byokg_metaqa_recall.py --hops 2 --relation-names raw --out /tmp/raw.json
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import statistics
import sys
import time
from pathlib import Path

from machine_info import stamp

from kgrag.graph import read_triples

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT.parent / "shared" / "data" / "metaqa"
CACHE = ROOT / "benchmarks" / ".cache" / "embeddings"
RESULTS = ROOT / "benchmarks" / "results" / "byokg_metaqa_recall.json"
sys.path.insert(0, str(ROOT / "shared"))
os.environ.setdefault("HF_HUB_OFFLINE", "1")

QUIET = ("misses", "candidate_hits_at_1_by_qtype")  # in the JSON, not on the console
_QUESTION_LINE = re.compile(r"^Question: (.*)$", re.MULTILINE)
_QUESTION_TAG = re.compile(r"<question>(.*?)</question>", re.DOTALL)


class OracleLinker:
    """A scripted LLM that answers every ByoKG-RAG prompt as a perfect model would."""

    def __init__(self, examples) -> None:
        self.by_question = {ex.question: ex for ex in examples}

    def __call__(self, prompt: str) -> str:
        if "Given a question, the graph schema" in prompt:  # the KG-Linker
            ex = self.by_question[_QUESTION_LINE.findall(prompt)[-1].strip()]
            if "Graph context:\n(none yet" not in prompt:
                return "<entities>\nFINISH\n</entities>"
            path = " -> ".join(step.relation for step in ex.relation_path)
            topics = "\n".join(ex.entities)
            return (f"<entities>\n{topics}\n</entities>\n<paths>\n{path}\n</paths>\n"
                    "<answers>\n</answers>")
        if "Choose the relations" in prompt:  # agentic relation selection
            ex = self.by_question[_QUESTION_TAG.findall(prompt)[-1].strip()]
            gold = "\n".join(dict.fromkeys(step.relation for step in ex.relation_path))
            return f"<selected>\n{gold}\n</selected>"
        return "<next-entities>\nFINISH\n</next-entities>"


def evaluate(method, examples, *, strip_brackets: bool = False) -> dict:
    from kgrag.eval.metrics import answer_recall
    from kgrag.methods.byokg import retrieved_entities

    recalls, times, calls, top1, misses = [], [], [], [], []
    top1_by_qtype: dict[str, list[int]] = {}
    for ex in examples:
        question = ex.question_text if strip_brackets else ex.question
        start = time.perf_counter()
        result = method.retrieve(question)
        times.append(time.perf_counter() - start)
        found = retrieved_entities(result.items)
        recall = answer_recall(found, ex.answers)
        recalls.append(recall)
        calls.append(result.usage.calls)
        cands = result.metadata.get("answer_candidates")
        if cands is not None:
            top1.append(1.0 if cands and cands[0] in set(ex.answers) else 0.0)
            counts = top1_by_qtype.setdefault(ex.qtype, [0, 0])
            counts[0] += int(top1[-1])
            counts[1] += 1
        if recall < 1.0 and len(misses) < 10:
            missing = sorted(set(ex.answers) - found)[:5]
            misses.append({"question": ex.question, "qtype": ex.qtype, "recall": round(recall, 3),
                           "missing": missing, "items": len(result.items)})
    out = {
        "questions": len(examples),
        "answer_recall": round(statistics.mean(recalls), 4),
        "full_recall": round(sum(r == 1.0 for r in recalls) / len(recalls), 4),
        "hit": round(sum(r > 0 for r in recalls) / len(recalls), 4),
        "llm_calls": round(statistics.mean(calls), 2),
        "median_ms": round(1000 * statistics.median(times), 2),
        "mean_ms": round(1000 * statistics.mean(times), 2),
        "misses": misses,
    }
    if top1:
        out["candidate_hits_at_1"] = round(statistics.mean(top1), 4)
        out["candidate_hits_at_1_by_qtype"] = dict(sorted(top1_by_qtype.items()))
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--limit", type=int, default=300, help="questions per hop (seeded sample)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--hops", default="1,2,3")
    parser.add_argument("--skip-llm-free", action="store_true")
    parser.add_argument("--relation-names", choices=("words", "raw"), default="words",
                        help="embed relation names as words (default) or as raw identifiers")
    parser.add_argument("--out", type=Path, default=RESULTS, help="results JSON path")
    args = parser.parse_args()

    import numpy as np
    import torch

    torch.set_num_threads(1)  # single-query inference: threads only add contention on 2 cores
    from kgrag.embed import CachedEmbedder, default_embedder
    from kgrag.eval.datasets import load_metaqa
    from kgrag.methods.byokg import ByoKGRAG
    from kgrag.methods.byokg.triplets import TripletScorer

    t0 = time.perf_counter()
    kg = read_triples(DATA / "kb_reconstructed.txt", sep="|")
    embedder = CachedEmbedder(default_embedder(), CACHE, min_texts=500)
    base = ByoKGRAG(kg, embedder=embedder)
    scorer, linker = base.scorer, base.linker.build()
    if args.relation_names == "raw":  # the behaviour before relation_words (commit a289e8c)
        raw = np.asarray(embedder.embed_documents(list(kg.relation_names)), np.float32)
        scorer = TripletScorer(kg, embedder, node_vectors=scorer.node_vectors, relation_vectors=raw)
    setup_s = time.perf_counter() - t0
    print(f"{kg!r}; embeddings + linker ready in {setup_s:.1f}s", flush=True)

    report = {"kg": kg.counts(), "setup_s": round(setup_s, 1), "limit": args.limit,
              "seed": args.seed, "relation_names": args.relation_names,
              "python": platform.python_version(), "hops": {}}
    for hop in [int(h) for h in args.hops.split(",")]:
        examples = load_metaqa(DATA, hop, limit=args.limit, seed=args.seed)
        oracle = ByoKGRAG(kg, llm=OracleLinker(examples), linker=linker, scorer=scorer)
        row = {"oracle": evaluate(oracle, examples)}
        oracle_row = {k: v for k, v in row['oracle'].items() if k != 'misses'}
        print(f"{hop}-hop oracle: {json.dumps(oracle_row)}", flush=True)
        if not args.skip_llm_free:
            free = ByoKGRAG(kg, llm=None, linker=linker, scorer=scorer)
            row["llm_free"] = evaluate(free, examples)
            row["llm_free_no_brackets"] = evaluate(free, examples, strip_brackets=True)
            for key in ("llm_free", "llm_free_no_brackets"):
                print(f"{hop}-hop {key}: "
                      f"{json.dumps({k: v for k, v in row[key].items() if k not in QUIET})}",
                      flush=True)
        report["hops"][str(hop)] = row
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(stamp(report), indent=2, ensure_ascii=False) + "\n",
                        encoding="utf-8")
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
