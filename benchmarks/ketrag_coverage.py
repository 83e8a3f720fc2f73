"""KET-RAG keyword channel vs a plain dense-chunk retriever: answer coverage at L tokens.

Runs the LLM-free KET-RAG index (budget beta = 0: the keyword channel gets all of L, i.e. the
paper's Keyword-RAG) on

* MuSiQue, KET-RAG's own 500-question sample (``musique/ketrag_500``: ``document.txt``, 6,761
  paragraphs, fed as one document exactly as the reference code does), and
* HotpotQA, HippoRAG's 100 training questions (``hotpotqa/hipporag_train100``: 994 paragraphs,
  written as ``Title: text`` lines of one document),

with the paper's low-cost setting (chunks of l = 1200 tokens, m = 3 splits -> 150-token
sub-chunks, k = 2, context L = 12,000 tokens; smaller L are reported too). The baselines rank
by cosine to the question, with the same MiniLM vectors, and fill the same budget with the same
``id|text`` lines (:mod:`kgrag.methods.ketrag.baselines`): ``dense-150`` over the 150-token
sub-chunks (the paper's high-accuracy Text-RAG granularity), ``dense-1200`` over the
1,200-token chunks (low-cost Text-RAG; a chunk's vector is the mean of its sub-chunk vectors)
and ``knng-1200`` (KNNG-RAG: each seed chunk followed by its KNN-graph neighbours).

Coverage = the gold answer occurs, after SQuAD normalisation, as a whole phrase in the context
(:func:`kgrag.eval.metrics.answer_recall`). HotpotQA also reports coverage without its yes/no
questions, whose answer word appears in almost any context.

It also reports indexing time per stage (the first run embeds; later runs read the embeddings
cached under ``benchmarks/.cache/ketrag/``) and the projected skeleton-extraction cost for
beta = 0.8 vs 1.0, computed from the PageRank ranking of this corpus (first-pass prompts are
rendered and counted exactly; no LLM is called).

Usage (from the repo root)::

    python benchmarks/ketrag_coverage.py                 # both datasets
    python benchmarks/ketrag_coverage.py --dataset hotpotqa
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time
from pathlib import Path

import numpy as np
from machine_info import stamp

from kgrag.embed import CachedEmbedder, default_embedder
from kgrag.eval.metrics import answer_recall
from kgrag.methods.ketrag import build_index
from kgrag.methods.ketrag.baselines import knng_rag, text_rag
from kgrag.methods.ketrag.retrieval import retrieve_context
from kgrag.text import default_tokenizer

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT.parent / "shared" / "data"
CACHE = ROOT / "benchmarks" / ".cache" / "ketrag"
RESULTS = ROOT / "benchmarks" / "results" / "ketrag_coverage.json"
BUDGETS = (12_000, 4_000, 1_000)


def load_musique() -> tuple[list[str], list[dict]]:
    root = DATA / "musique" / "ketrag_500"
    text = (root / "document.txt").read_text(encoding="utf-8")
    qa = json.loads((root / "qa-pairs.json").read_text(encoding="utf-8"))
    return [text], [{"question": q["question"], "answer": q["answer"]} for q in qa]


def load_hotpotqa() -> tuple[list[str], list[dict]]:
    root = DATA / "hotpotqa" / "hipporag_train100"
    corpus = json.loads((root / "hotpotqa_train_corpus.json").read_text(encoding="utf-8"))
    text = "\n".join(f"{title}: {''.join(sentences).strip()}"
                     for title, sentences in corpus.items())
    qa = json.loads((root / "hotpotqa_train.json").read_text(encoding="utf-8"))
    return [text], [{"question": q["question"], "answer": q["answer"]} for q in qa]


DATASETS = {"musique": load_musique, "hotpotqa": load_hotpotqa}


def run(name: str, embedder, tok) -> dict:
    docs, qa = DATASETS[name]()
    cache_files = set(CACHE.glob("*.npy")) if CACHE.exists() else set()
    saved = CACHE / f"index_{name}" / "manifest.json"
    previous_timings = json.loads(saved.read_text()).get("timings") if saved.exists() else None
    t = time.perf_counter()
    index = build_index(docs, embedder=embedder, budget=0, progress=True)
    index_time = time.perf_counter() - t
    embeddings_were_cached = bool(cache_files) and set(CACHE.glob("*.npy")) == cache_files
    index.save(CACHE / f"index_{name}")
    questions = [x["question"] for x in qa]
    q_vectors = embedder.embed_documents(questions)
    is_yes_no = np.array([x["answer"].strip().lower() in ("yes", "no") for x in qa])
    rows: dict[str, dict] = {}
    latency = []
    for budget in BUDGETS:
        cfg = index.config.replace(context_tokens=budget)
        cov = {"keyword": [], "dense-150": [], "dense-1200": [], "knng-1200": []}
        for x, q in zip(qa, q_vectors):
            t0 = time.perf_counter()
            # what KETRAG.retrieve does after embedding the question (vectors computed once above)
            sections, _ = retrieve_context(index, q, cfg, tok)
            kw_ctx = "\n\n".join(s.render() for s in sections)
            latency.append(time.perf_counter() - t0)
            d150, _ = text_rag(index, q, budget, tok, unit="sub_chunk")
            d1200, _ = text_rag(index, q, budget, tok, unit="chunk")
            knng, _ = knng_rag(index, q, budget, tok)
            for key, ctx in (("keyword", kw_ctx), ("dense-150", d150), ("dense-1200", d1200),
                             ("knng-1200", knng)):
                cov[key].append(answer_recall(ctx, [x["answer"]]))
        row = {}
        for key, values in cov.items():
            arr = np.asarray(values)
            row[key] = {"coverage": round(float(arr.mean()) * 100, 1)}
            if is_yes_no.any():
                row[key]["coverage_without_yes_no"] = round(float(arr[~is_yes_no].mean()) * 100, 1)
        rows[str(budget)] = row
        print(f"{name} L={budget}: " + ", ".join(f"{k} {v['coverage']}" for k, v in row.items()),
              flush=True)
    return {
        "questions": len(qa),
        "yes_no_questions": int(is_yes_no.sum()),
        "index": index.summary(),
        "corpus_tokens": int(index.chunk_tokens.sum()),
        "indexing_seconds": round(index_time, 1),
        "indexing_stage_seconds": {k: round(v, 2) for k, v in index.timings.items()},
        "embeddings_were_cached": embeddings_were_cached,
        # stage times of the build saved by the previous run (the cold one, when this run
        # found the embeddings cached)
        "previous_build_stage_seconds": previous_timings,
        # retrieval after the question embedding (shared by both retrievers), on a shared machine
        "keyword_retrieval_ms_per_question": round(1000 * float(np.mean(latency)), 1),
        "coverage": rows,
        "projected_extraction": {"0.8": index.projected_cost(0.8),
                                 "1.0": index.projected_cost(1.0)},
    }


def markdown(results: dict) -> str:
    out = ["| dataset | L | keyword channel (KET-RAG, beta=0) | dense-150 | dense-1200 "
           "| KNNG-1200 |",
           "|---|---|---|---|---|---|"]
    for name, r in results["datasets"].items():
        for budget, row in r["coverage"].items():
            cells = []
            for key in ("keyword", "dense-150", "dense-1200", "knng-1200"):
                if key not in row:
                    cells.append("–")
                    continue
                c = row[key]
                extra = (f" ({c['coverage_without_yes_no']} w/o yes/no)"
                         if "coverage_without_yes_no" in c else "")
                cells.append(f"{c['coverage']}{extra}")
            out.append(f"| {name} | {int(budget):,} | " + " | ".join(cells) + " |")
    out += ["", "| dataset | chunks | sub-chunks | keywords | indexing s (embeddings cached?) | "
            "extraction calls beta=0.8 / 1.0 | first-pass prompt tokens beta=0.8 / 1.0 |",
            "|---|---|---|---|---|---|---|"]
    for name, r in results["datasets"].items():
        p8, p1 = r["projected_extraction"]["0.8"], r["projected_extraction"]["1.0"]
        out.append(
            f"| {name} | {r['index']['chunks']} | {r['index']['sub_chunks']} | "
            f"{r['index']['keywords']:,} | "
            f"{r['indexing_seconds']} ({r['embeddings_were_cached']}) | "
            f"{p8['first_extraction_calls']} (+{p8['max_gleaning_calls']} gleanings) / "
            f"{p1['first_extraction_calls']} (+{p1['max_gleaning_calls']}) | "
            f"{p8['first_extraction_prompt_tokens']:,} / "
            f"{p1['first_extraction_prompt_tokens']:,} |")
    return "\n".join(out)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--dataset", choices=sorted(DATASETS), action="append")
    args = parser.parse_args(argv)
    names = args.dataset or ["musique", "hotpotqa"]
    embedder = CachedEmbedder(default_embedder(), CACHE, min_texts=50)
    tok = default_tokenizer()
    previous = json.loads(RESULTS.read_text()) if RESULTS.exists() else {"datasets": {}}
    results = {
        "benchmark": "ketrag_coverage",
        "embedder": "all-MiniLM-L6-v2 (packaged)",
        "tokenizer": tok.name,
        "config": {"chunk_size": 1200, "splits": 3, "knn_k": 2, "budget": 0.0,
                   "context_tokens": list(BUDGETS)},
        "machine": {"python": platform.python_version(), "cpus": os.cpu_count(),
                    "platform": platform.platform()},
        "datasets": dict(previous.get("datasets", {})),
    }
    for name in names:
        results["datasets"][name] = run(name, embedder, tok)
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(json.dumps(stamp(results), indent=2) + "\n")
    print(markdown(results))
    return 0


if __name__ == "__main__":
    sys.exit(main())
