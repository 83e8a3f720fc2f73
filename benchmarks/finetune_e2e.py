"""UltRAG's query writer and SimGRAG's pattern writer, fine-tuned here, end to end.

Question -> the fine-tuned SmolLM2-135M adapter (``kgrag finetune --method ultrag|simgrag``),
sent the compact prompt it was trained on (:func:`kgrag.finetune.use.finetuned_params`, what
``--llm local:DIR`` gives ``kgrag eval``) -> the method -> answers. No oracle anywhere: the
topic entity is linked from the written query / pattern as with any LLM. Held-out questions
only (the harness's evaluation sample, 300 per dataset, seed 0; asserted absent from the
adapter's training pairs).

* **UltRAG**: exactly ``kgrag eval --mode llm --method ultrag --llm local:ADAPTER --param
  arbitrator=margin`` (:func:`kgrag.eval.runner.evaluate`): the answers are the margin
  arbitrator's (LLM-free; the adapter writes queries, it was not trained to arbitrate), so
  Hits@1 is the first answer, and answer recall is over the retrieved entities.
* **SimGRAG**: the pattern step with the adapter, then SimGRAG's LLM-free search; the answer of
  a subgraph is the node it maps to the pattern's *last new* ``UNKNOWN`` node (the node the
  question asks for in every pattern the oracle writes, e.g. ``UNKNOWN genre 1`` in
  ``[Satoshi Kon, director, UNKNOWN movie 1], [UNKNOWN movie 1, genre, UNKNOWN genre 1]``), so
  Hits@1 = the best subgraph's answer node is gold, as the oracle rows of SimGRAG score it.
  SimGRAG's answer step (an LLM reading the subgraphs) is not run: the adapter was not trained
  for it.

Rows (``method``, ``dataset``, ``setting`` = ``"finetuned"``, ``n``, ``hits@1`` ...) replace
this method's end-to-end rows in ``benchmarks/results/finetune.json``; per-question records with
every raw reply go to ``benchmarks/.cache/finetune_e2e/``. Not a timing benchmark (seconds per
question are recorded)::

    python benchmarks/finetune_e2e.py --adapter runs/ultrag --method ultrag \\
        --datasets metaqa-1hop metaqa-2hop metaqa-3hop pq-2h pq-3h --limit 100
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "shared"), str(ROOT / "benchmarks")]

from machine_info import stamp  # noqa: E402

OUT = ROOT / "benchmarks" / "results" / "finetune.json"
RECORDS = ROOT / "benchmarks" / ".cache" / "finetune_e2e"
EMB_CACHE = ROOT / "benchmarks" / ".cache" / "embeddings"
SETTING = "finetuned"


def answer_node(pattern: list[list[str]]) -> str | None:
    """The pattern's last new ``UNKNOWN`` node (see the module docstring), else ``None``."""
    last = None
    seen: set[str] = set()
    for head, _, tail in pattern:
        for node in (head, tail):
            if node.upper().startswith("UNKNOWN") and node not in seen:
                seen.add(node)
                last = node
    return last


def _check_heldout(adapter: Path, dataset: str, examples: list) -> None:
    pairs = adapter / "pairs.jsonl"
    trained = ({json.loads(line)["source"] for line in pairs.read_text().splitlines()}
               if pairs.is_file() else set())
    leaked = {f"{dataset}:{ex.id}" for ex in examples} & trained
    assert not leaked, f"held-out questions were in the training pairs: {sorted(leaked)[:3]}"


def run_ultrag(chat: Any, spec: str, dataset: str, limit: int, root: Path) -> dict[str, Any]:
    from kgrag.eval.runner import evaluate
    from kgrag.finetune.use import finetuned_params

    params = {**finetuned_params(spec, "ultrag"), "arbitrator": "margin"}
    summary = evaluate("ultrag", dataset, mode="llm", llm=chat, limit=limit, seed=0,
                       out_dir=RECORDS / Path(spec.split("?")[0]).name, data_root=root,
                       cache_dir=EMB_CACHE, params=params)
    steps, metrics = summary.get("llm_steps", {}), summary["metrics"]
    return {"hits@1": metrics.get("hits@1"), "em": metrics.get("em"),
            "answer_recall": metrics.get("answer_recall"),
            "unusable_replies": {s: f"{v.get('unusable', 0)}/{v.get('calls', 0)}"
                                 for s, v in steps.items()},
            "seconds_per_question": round(summary.get("latency_ms_mean", 0) / 1000, 3)
            if summary.get("latency_ms_mean") else None,
            "records": summary["jsonl"]}


def run_simgrag(chat: Any, spec: str, dataset: str, examples: list, kg: Any, method: Any
                ) -> dict[str, Any]:
    from kgrag.eval.harness import subgraph_answers
    from kgrag.eval.metrics import answer_recall, hits_at_k
    from kgrag.eval.runner import read_records
    from kgrag.llm.steps import record_replies

    path = RECORDS / Path(spec.split("?")[0]).name / f"simgrag__{dataset}.jsonl"
    path.parent.mkdir(parents=True, exist_ok=True)
    done = {rec["id"]: rec for rec in read_records(path)}  # a torn last line is cut off
    with path.open("a", encoding="utf-8") as handle:
        for ex in examples:
            if ex.id in done:
                continue
            start = time.perf_counter()
            with record_replies() as replies:
                result = method.retrieve(ex.question)
            seconds = time.perf_counter() - start
            pattern = result.metadata.get("pattern") or []
            node = answer_node(pattern)
            ranked = subgraph_answers(result.items, node) if node else []
            names = {n for sub in result.items for n in sub.metadata["mapping"].values()}
            rec = {"id": ex.id, "question": ex.question, "gold": list(ex.answers),
                   "pattern": pattern, "answer_node": node, "ranked": ranked[:10],
                   "hits@1": hits_at_k(ranked, ex.answers, 1),
                   "answer_recall": answer_recall(names, ex.answers),
                   "usable": all(r.usable for r in replies) and bool(pattern),
                   "replies": [r.reply[:400] for r in replies],
                   "calls": len(replies), "seconds": round(seconds, 3)}
            handle.write(json.dumps(rec, ensure_ascii=False) + "\n")
            handle.flush()
            done[ex.id] = rec
    recs = [done[ex.id] for ex in examples]
    n = len(recs)
    return {"hits@1": round(100 * statistics.fmean(r["hits@1"] for r in recs), 1),
            "answer_recall": round(100 * statistics.fmean(r["answer_recall"] for r in recs), 1),
            "unusable_replies": {"pattern": f"{sum(not r['usable'] for r in recs)}/{n}"},
            "seconds_per_question": round(statistics.fmean(r["seconds"] for r in recs), 3),
            "records": str(path)}


def write_rows(method: str, rows: list[dict[str, Any]], manifest: dict[str, Any],
               adapter: Path) -> None:
    result = json.loads(OUT.read_text(encoding="utf-8")) if OUT.is_file() else {"rows": []}
    replaced = {(r["method"], r["dataset"], r["setting"], r["subset"]) for r in rows}
    keep = [r for r in result.get("rows", [])
            if (r.get("method"), r.get("dataset"), r.get("setting"), r.get("subset"))
            not in replaced]
    result["rows"] = keep + rows
    adapters = result.setdefault("adapters", {})
    adapters[method] = {"adapter": str(adapter),
                        **{key: manifest.get(key) for key in (
                            "base", "training", "config", "data", "adapter_bytes",
                            "prompt_version")}}
    result["loadavg_end_to_end"] = list(os.getloadavg())
    OUT.write_text(json.dumps(stamp(result), indent=1) + "\n", encoding="utf-8")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--adapter", required=True, help="folder written by kgrag finetune")
    parser.add_argument("--method", required=True, choices=("ultrag", "simgrag"))
    parser.add_argument("--datasets", nargs="+", default=["metaqa-1hop", "metaqa-2hop", "pq-2h"])
    parser.add_argument("--limit", type=int, default=100,
                        help="questions per dataset (the harness's seeded sample, <= 300)")
    parser.add_argument("--max-new-tokens", type=int, default=64)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--data-root", default=os.environ.get("KGRAG_DATA", "/work/shared/data"))
    args = parser.parse_args(argv)

    from kgrag.eval.runner import DATASETS
    from kgrag.finetune.pairs import heldout_examples
    from kgrag.finetune.use import checked_manifest
    from kgrag.llm.local import local_chat_model

    adapter = Path(args.adapter).resolve()
    manifest = checked_manifest(adapter, args.method)
    spec = f"local:{adapter}?max_new_tokens={args.max_new_tokens}"
    started = time.perf_counter()
    chat = local_chat_model(str(adapter), max_new_tokens=args.max_new_tokens,
                            n_threads=args.threads)
    load_seconds = round(time.perf_counter() - started, 1)
    root = Path(args.data_root)
    rows = []
    graphs: dict[str, Any] = {}
    for dataset in args.datasets:
        # the harness's own sample of --limit questions (what kgrag eval --limit N runs): a
        # subset of the 300 held-out ones, none of them in the adapter's training pairs
        examples = DATASETS[dataset].load_examples(root, args.limit, 0)
        assert {ex.id for ex in examples} <= {ex.id for ex in heldout_examples(dataset, root)}
        _check_heldout(adapter, dataset, examples)
        if args.method == "ultrag":
            measured = run_ultrag(chat, spec, dataset, args.limit, root)
        else:
            from kgrag.embed.graph_vectors import graph_name_vectors
            from kgrag.eval.embedding import EvalEmbedder
            from kgrag.finetune.use import finetuned_params
            from kgrag.methods.simgrag import SimGRAG

            ds = DATASETS[dataset]
            if ds.resource_key not in graphs:
                graphs[ds.resource_key] = ds.load_resource(root)
            kg = graphs[ds.resource_key]
            emb = EvalEmbedder(None, EMB_CACHE)
            method = SimGRAG(kg, llm=chat, embedder=emb,
                             node_vectors=graph_name_vectors(kg, emb, "nodes"),
                             on_unusable_reply="empty", **finetuned_params(spec, "simgrag"))
            measured = run_simgrag(chat, spec, dataset, examples, kg, method)
        row = {"method": args.method, "dataset": dataset, "setting": SETTING,
               "subset": "end to end", "n": len(examples), **measured,
               "model_load_seconds": load_seconds, "threads": args.threads}
        print(json.dumps(row), flush=True)
        rows.append(row)
        write_rows(args.method, rows, manifest, adapter)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
