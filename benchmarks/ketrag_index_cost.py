"""KET-RAG indexing cost: measured LLM calls and tokens at beta = 0.8 and 1.0, and how well the
beta = 0.8 run projects the full-extraction (beta = 1) cost.

No LLM is available offline, so the extraction is answered by the deterministic record-format
fake used in the tests (``tests/ketrag_fakes.py``: entities = capitalised word runs, relations =
entity pairs sharing a sentence). Prompt tokens are those of kgrag's real prompts over the real
corpus; completion tokens are the fake's, so they only indicate scale. Embeddings use a
feature-hashing embedder (cost does not depend on them; it keeps the run fast): the PageRank
selection therefore differs slightly from a MiniLM index.

The run also exercises the concurrent worker pool (4 workers) and the reply cache: the beta = 1
build reuses the beta = 0.8 build's cached replies (same cache directory) and pays only for the
rest, which is reported too.

Usage::

    python benchmarks/ketrag_index_cost.py            # HotpotQA corpus (994 paragraphs)
"""

from __future__ import annotations

import json
import shutil
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT / "benchmarks"))

from ketrag_coverage import load_hotpotqa
from ketrag_fakes import HashingEmbedder, RecordChatModel, RecordResponder
from machine_info import stamp

from kgrag.methods.ketrag import build_index

CACHE = ROOT / "benchmarks" / ".cache" / "ketrag_cost"
RESULTS = ROOT / "benchmarks" / "results" / "ketrag_index_cost.json"


def build(docs, beta: float, responder: RecordResponder) -> tuple[dict, float, dict]:
    t = time.perf_counter()
    index = build_index(docs, llm=RecordChatModel(responder=responder),
                        embedder=HashingEmbedder(384), budget=beta, cache_dir=CACHE,
                        max_workers=4, progress=True)
    return index.cost, time.perf_counter() - t, index.summary()


def main() -> int:
    docs, _ = load_hotpotqa()
    shutil.rmtree(CACHE, ignore_errors=True)
    runs = {}
    for beta in (0.8, 1.0):
        responder = RecordResponder()
        cost, seconds, summary = build(docs, beta, responder)
        runs[f"{beta:g}"] = {"seconds": round(seconds, 1), "summary": summary,
                             "calls_paid_this_run": len(responder.calls),
                             "calls_by_kind_paid": responder.kinds(), "cost": cost}
        print(f"beta={beta:g}: {cost['llm']['total']} (paid {len(responder.calls)} calls)",
              flush=True)
    projected = runs["0.8"]["cost"]["projection"]["1"]
    actual = runs["1"]["cost"]["llm"]["total"]
    comparison = {
        "projected_from_beta_0.8": projected,
        "measured_at_beta_1": actual,
        "first_pass_prompt_tokens_exact": projected["first_extraction_prompt_tokens"]
        == runs["1"]["cost"]["llm"]["by_kind"]["extract"]["prompt_tokens"],
    }
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    report = {"benchmark": "ketrag_index_cost",
              "corpus": "hotpotqa hipporag_train100 (994 paragraphs, one document)",
              "llm": "deterministic record-format fake (tests/ketrag_fakes.py)",
              "runs": runs, "projection_check": comparison}
    RESULTS.write_text(json.dumps(stamp(report), indent=2) + "\n")
    print(json.dumps(comparison, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
