"""GraphRAFT's query selector (L1): fine-tuned vs untuned SmolLM2-135M vs embeddings vs chat choice.

Per held-out question (the harness's evaluation sample: 300 questions, seed 0, never in the
training data -- :func:`kgrag.finetune.pairs.training_examples` excludes them): the gold topic
entity is linked, every GraphRAFT candidate query is enumerated, one selector picks m = 5, the
selected queries run and the context nodes are ranked (as the harness's oracle mode does, with
the selector in place of the oracle). Hits@1 = the first context node is a gold answer.

Settings:

* ``finetuned`` -- the LoRA adapter, constrained decoding (every candidate's compact text scored
  by total log-probability after the prompt: the trie-constrained beam with a full beam);
* ``base`` -- the same with the adapter disabled (the untuned base model);
* ``embedding`` -- :class:`~kgrag.methods.graphraft.selection.EmbeddingSelector` (MiniLM);
* ``base-chat`` -- the untuned base as a chat chooser
  (:class:`~kgrag.methods.graphraft.selection.ChatChoiceSelector`, greedy, numbered list);
* ``oracle`` -- the candidate whose relations are the gold path (the ceiling).

Per-question records go to ``<out>.d/<dataset>__<setting>.jsonl`` (a rerun skips done questions);
the summary is ``benchmarks/results/finetune.json``. Not a timing benchmark (run it with
``nice -n 19``; the per-question seconds are recorded but depend on the machine's load)::

    nice -n 19 python benchmarks/finetune.py --adapter runs/graphraft-l1 \\
        --datasets metaqa-1hop metaqa-2hop pq-2h --settings finetuned base embedding oracle
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "shared"))

from machine_info import stamp  # noqa: E402

from kgrag.eval.metrics import hits_at_k  # noqa: E402
from kgrag.finetune.pairs import EVAL_LIMIT, EVAL_SEED, SYSTEM, heldout_examples  # noqa: E402

SETTINGS = ("finetuned", "base", "finetuned-per-token", "base-per-token", "embedding", "base-chat",
            "oracle")


def cpu_info() -> dict[str, Any]:
    model, flags = platform.processor(), []
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name") and not model.strip():
                model = line.split(":", 1)[1].strip()
            elif line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
            if line.startswith("flags"):
                flags = line.split(":", 1)[1].split()
                break
    except OSError:
        pass
    simd = [f for f in flags if f in ("sse4_2", "avx", "avx2", "fma", "avx512f", "avx512_bf16",
                                      "amx_bf16", "avx512_vnni", "avx_vnni")]
    return {"cpu": model, "simd_flags": simd, "cpu_count": os.cpu_count()}


class ChatGenerator:
    """A prompt -> reply callable over a local causal LM: chat template, greedy decoding."""

    def __init__(self, model: Any, tokenizer: Any, max_new_tokens: int = 12) -> None:
        self.model, self.tokenizer, self.max_new_tokens = model, tokenizer, max_new_tokens

    def __call__(self, prompt: str) -> str:
        import torch

        ids = self.tokenizer.apply_chat_template([{"role": "user", "content": prompt}],
                                                 add_generation_prompt=True, return_tensors="pt",
                                                 return_dict=True)
        with torch.no_grad():
            out = self.model.generate(**ids, max_new_tokens=self.max_new_tokens, do_sample=False,
                                      pad_token_id=self.tokenizer.eos_token_id)
        return str(self.tokenizer.decode(out[0, ids["input_ids"].shape[1]:],
                                         skip_special_tokens=True))


def build_selector(setting: str, *, model: Any, tokenizer: Any, template: str, method: Any) -> Any:
    from kgrag.eval.oracles import GraphRAFTOracleSelector
    from kgrag.finetune.model import CandidateScorer, ScoredChoiceSelector
    from kgrag.methods.graphraft.selection import ChatChoiceSelector, EmbeddingSelector

    if setting in ("finetuned", "base", "finetuned-per-token", "base-per-token"):
        return ScoredChoiceSelector(CandidateScorer(model, tokenizer, template),
                                    per_token=setting.endswith("per-token"))
    if setting == "embedding":
        return EmbeddingSelector(method.embedder, method.graph)
    if setting == "base-chat":
        from kgrag.llm.base import as_llm

        return ChatChoiceSelector(as_llm(ChatGenerator(model, tokenizer)))
    if setting == "oracle":
        return GraphRAFTOracleSelector()
    raise ValueError(setting)


def run_setting(dataset: str, setting: str, examples: list, method: Any, selector: Any,
                records_path: Path, model: Any) -> list[dict[str, Any]]:
    """One record per question (appended and flushed; done questions are skipped)."""
    import contextlib

    from kgrag.errors import LLMOutputError
    from kgrag.eval.oracles import GraphRAFTOracleSelector
    from kgrag.eval.runner import read_records

    oracle = GraphRAFTOracleSelector()
    # done questions (kgrag's records reader: a half-written last line is cut off the file)
    done: dict[str, dict[str, Any]] = {rec["id"]: rec for rec in read_records(records_path)}
    untuned = (model.disable_adapter() if setting.startswith("base")
               and hasattr(model, "disable_adapter") else contextlib.nullcontext())
    with untuned, open(records_path, "a", encoding="utf-8") as handle:
        for number, ex in enumerate(examples, start=1):
            if ex.id in done:
                continue
            start = time.perf_counter()
            entities = method.link(list(ex.entities[:1]))
            cands = method.candidates(entities)
            if isinstance(selector, GraphRAFTOracleSelector):
                selector.example = ex
            try:
                picked = selector.select(ex.question, cands,
                                         method.config.beam_width) if cands else []
                error = ""
            except LLMOutputError as exc:
                picked, error = [], str(exc)[:200]
            nodes = method.assemble_context(ex.question, [cands[i] for i in picked])
            ranked = [n.name for n in nodes]
            oracle.example = ex
            gold_pick = oracle.select(ex.question, cands, 1) if cands else []
            rec = {"id": ex.id, "hits@1": hits_at_k(ranked, ex.answers, 1),
                   "hits@5": hits_at_k(ranked, ex.answers, 5), "candidates": len(cands),
                   "picked_gold_path": bool(picked and gold_pick and picked[0] == gold_pick[0]),
                   "top": cands[picked[0]].text if picked else None,
                   "seconds": round(time.perf_counter() - start, 3), "error": error}
            handle.write(json.dumps(rec) + "\n")
            handle.flush()
            done[ex.id] = rec
            if number % 25 == 0:
                hits = [r["hits@1"] for r in done.values()]
                print(f"  {dataset} {setting}: {len(done)}/{len(examples)} "
                      f"hits@1 {100 * sum(hits) / len(hits):.1f}", flush=True)
    return [done[ex.id] for ex in examples if ex.id in done]


def summarise(dataset: str, setting: str, records: list[dict[str, Any]]) -> dict[str, Any]:
    n = len(records)
    mean = lambda key: round(100 * sum(float(r[key]) for r in records) / n, 1) if n else None  # noqa: E731
    return {"method": "graphraft", "dataset": dataset, "setting": setting, "n": n,
            "hits@1": mean("hits@1"), "hits@5": mean("hits@5"),
            "picked_gold_path": mean("picked_gold_path"),
            "errors": sum(1 for r in records if r.get("error")),
            "seconds_per_question": round(sum(r["seconds"] for r in records) / n, 3) if n else None}


def write_summary(out: Path, records_dir: Path, root: Path, args: argparse.Namespace,
                  manifest: dict[str, Any], load_seconds: float) -> None:
    """``finetune.json`` from every records file (several runs may fill the folder at once:
    each rewrite summarises all of them), over the held-out sample's questions."""
    per_file: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for path in sorted(records_dir.glob("*__*.jsonl")):
        dataset, setting = path.stem.split("__", 1)
        records = []
        for line in path.read_text(encoding="utf-8").splitlines():
            try:
                records.append(json.loads(line))
            except json.JSONDecodeError:
                continue
        if records:
            per_file[(dataset, setting)] = records
    rows = [{**summarise(d, s, r), "subset": "all"} for (d, s), r in per_file.items()]
    # side by side: every setting on the same first-N held-out questions (records are written
    # in held-out order), N = what the slowest model setting (and, apart, base-chat) finished
    for dataset in sorted({d for d, _ in per_file}):
        ids = [ex.id for ex in heldout_examples(dataset, root)]
        done = {s: {r["id"]: r for r in recs} for (d, s), recs in per_file.items() if d == dataset}
        for group in (("finetuned", "base"), ("finetuned-per-token", "base-per-token"),
                      ("base-chat",)):
            present = [s for s in group if s in done]
            if not present:
                continue
            n = min(len(done[s]) for s in present)
            first = ids[:n]
            for setting, recs in done.items():
                if n and all(i in recs for i in first):
                    rows.append({**summarise(dataset, setting, [recs[i] for i in first]),
                                 "subset": f"first {n} (as {'/'.join(group)})"})
    previous = json.loads(out.read_text()) if out.is_file() else {}
    if manifest:
        previous.update({"adapter": str(args.adapter), "base": manifest.get("base"),
                         "adapter_training": manifest.get("training"),
                         "adapter_config": manifest.get("config"),
                         "adapter_data": manifest.get("data"),
                         "adapter_bytes": manifest.get("adapter_bytes"),
                         "model_load_seconds": load_seconds})
    result = {
        **previous,
        "benchmark": "GraphRAFT L1 selector: fine-tuned vs untuned SmolLM2-135M-Instruct vs "
                     "embeddings vs chat choice, on the harness's held-out sample (gold topic "
                     "entity linked)",
        "threads": args.threads, **cpu_info(), "loadavg": list(os.getloadavg()),
        # the end-to-end rows of the other methods (benchmarks/finetune_e2e.py) stay
        "rows": [r for r in previous.get("rows", []) if r.get("method") != "graphraft"] + rows,
    }
    out.write_text(json.dumps(stamp(result), indent=1) + "\n", encoding="utf-8")


def read_manifest_if(adapter: str | None) -> dict[str, Any]:
    from kgrag.finetune.model import read_manifest

    return read_manifest(adapter) if adapter else {}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--adapter", default=None, help="folder written by kgrag finetune "
                        "(needed for the finetuned setting)")
    parser.add_argument("--base", default="local:smollm2-135m",
                        help="the base model when no --adapter is given")
    parser.add_argument("--datasets", nargs="+", default=["metaqa-1hop", "metaqa-2hop", "pq-2h"])
    parser.add_argument("--settings", nargs="+", default=list(SETTINGS), choices=SETTINGS)
    parser.add_argument("--limit", type=int, default=EVAL_LIMIT,
                        help="the first N of the held-out sample (default: all 300)")
    parser.add_argument("--chat-limit", type=int, default=EVAL_LIMIT,
                        help="questions for the (slow) base-chat setting")
    parser.add_argument("--data-root", default=os.environ.get("KGRAG_DATA", "/work/shared/data"))
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--out", default=str(ROOT / "benchmarks" / "results" / "finetune.json"))
    parser.add_argument("--summary-only", action="store_true",
                        help="rewrite the JSON from the records already there, run nothing")
    args = parser.parse_args(argv)
    if args.summary_only:
        out = Path(args.out)
        manifest = read_manifest_if(args.adapter)
        write_summary(out, out.with_suffix(".d"), Path(args.data_root), args, manifest,
                      json.loads(out.read_text()).get("model_load_seconds", 0.0)
                      if out.is_file() else 0.0)
        return 0

    import torch

    from kgrag.eval.runner import DATASETS
    from kgrag.finetune.model import load_base, load_finetuned, prompt_template, read_manifest
    from kgrag.finetune.pairs import training_examples
    from kgrag.methods.graphraft.pipeline import GraphRAFT

    torch.set_num_threads(args.threads)
    root = Path(args.data_root)
    needs_model = {s for s in args.settings if s not in ("embedding", "oracle")}
    if any(s.startswith("finetuned") for s in args.settings) and not args.adapter:
        parser.error("the finetuned setting needs --adapter")
    t0 = time.perf_counter()
    manifest: dict[str, Any] = {}
    model = tokenizer = None
    if args.adapter:
        manifest = read_manifest(args.adapter)
        assert manifest["system"] == SYSTEM["graphraft"]
        if needs_model:
            model, tokenizer, _ = load_finetuned(args.adapter)
    elif needs_model:
        model, tokenizer = load_base(args.base)
    load_seconds = round(time.perf_counter() - t0, 1)
    template = (manifest["prompt_template"] if manifest
                else prompt_template(tokenizer, SYSTEM["graphraft"]) if tokenizer else "")
    out = Path(args.out)
    records_dir = out.with_suffix(".d")
    records_dir.mkdir(parents=True, exist_ok=True)
    trained_on = set()
    pairs_file = Path(args.adapter) / "pairs.jsonl" if args.adapter else None
    if pairs_file and pairs_file.is_file():
        trained_on = {json.loads(line)["source"] for line in pairs_file.read_text().splitlines()}
    graphs: dict[str, Any] = {}
    for dataset in args.datasets:
        spec = DATASETS[dataset]
        examples = heldout_examples(dataset, root, limit=EVAL_LIMIT, seed=EVAL_SEED)[:args.limit]
        leaked = {f"{dataset}:{ex.id}" for ex in examples} & trained_on
        assert not leaked, f"held-out questions were in the training pairs: {sorted(leaked)[:3]}"
        assert not {ex.id for ex in examples} & {ex.id for ex in training_examples(dataset, root)}
        if spec.resource_key not in graphs:
            graphs[spec.resource_key] = spec.load_resource(root)
        method = GraphRAFT(graphs[spec.resource_key])
        for setting in args.settings:
            subset = examples[:args.chat_limit] if setting == "base-chat" else examples
            selector = build_selector(setting, model=model, tokenizer=tokenizer,
                                      template=template, method=method)
            records = run_setting(dataset, setting, subset, method, selector,
                                  records_dir / f"{dataset}__{setting}.jsonl", model)
            print(json.dumps(summarise(dataset, setting, records)), flush=True)
            write_summary(out, records_dir, root, args, manifest, load_seconds)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
