"""Which runtime runs the local model faster: transformers vs llama.cpp, side by side, one run.

The model is SmolLM2-135M-Instruct (``kgrag.llm.local``, ``"smollm2-135m"``), measured through
the LangChain classes ``local_chat_model`` returns (``ChatHuggingFace`` over a transformers
pipeline, ``ChatLlamaCpp``), greedy, on the same prompts with the same thread count:

* ``load_s``: building the chat model (weights read; transformers de-quantises the GGUF);
* ``ttft_s``: time to first token of a streamed reply (prompt processing + one token);
* ``tokens_per_s``: generated tokens (counted with the runtime's own tokenizer) per second of
  the streamed reply after its first token -- the decode speed a user waits on.

Each runtime answers ``--prompts`` prompts after one warm-up reply; the medians are reported.
The runtime with more tokens/s is ``kgrag.llm.local``'s default (``runtime="auto"``).
Run under the benchmark lock (a quiet machine; load average recorded at start and end)::

    flock /work/bench.lock .venv/bin/python benchmarks/local_llm_runtime.py --threads 2

Writes ``benchmarks/results/local_llm_runtime.json``.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "shared"), str(ROOT)]

from machine_info import machine_info  # noqa: E402

from kgrag.llm.local import local_chat_model, resolve_local_model  # noqa: E402

PROMPTS = [
    "Write a short story about a robot who learns to paint.",
    "Explain how a bicycle works, step by step.",
    "Describe the city of Paris to someone who has never been there.",
    "List ten facts about the ocean, one per line.",
    "Write a letter to a friend about your summer holidays.",
]


def count_tokens(runtime: str, chat, text: str) -> int:
    if runtime == "llama.cpp":
        return len(chat.client.tokenize(text.encode("utf-8"), add_bos=False, special=False))
    return len(chat.tokenizer(text, add_special_tokens=False)["input_ids"])


def measure(runtime: str, threads: int, max_new_tokens: int, prompts: list[str]) -> dict:
    started = time.perf_counter()
    chat = local_chat_model("smollm2-135m", runtime=runtime, n_threads=threads,
                            max_new_tokens=max_new_tokens)
    load_s = time.perf_counter() - started
    rows = []
    for i, prompt in enumerate([prompts[0], *prompts]):
        start = time.perf_counter()
        first = None
        pieces = []
        for chunk in chat.stream(prompt):
            if first is None and chunk.content:
                first = time.perf_counter()
            pieces.append(chunk.content)
        end = time.perf_counter()
        text = "".join(pieces)
        tokens = count_tokens(runtime, chat, text)
        if i == 0:
            continue  # warm-up
        decode_s = end - (first or end)
        rows.append({"prompt": prompt[:40], "tokens": tokens,
                     "ttft_s": round((first or end) - start, 3),
                     "total_s": round(end - start, 3),
                     "tokens_per_s": round((tokens - 1) / decode_s, 2) if decode_s > 0 else None})
    return {
        "runtime": runtime, "class": type(chat).__name__, "load_s": round(load_s, 2),
        "ttft_s": round(statistics.median(r["ttft_s"] for r in rows), 3),
        "tokens_per_s": round(statistics.median(r["tokens_per_s"] for r in rows
                                                if r["tokens_per_s"]), 2),
        "tokens_mean": round(statistics.fmean(r["tokens"] for r in rows), 1),
        "replies": rows,
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--max-new-tokens", type=int, default=128)
    parser.add_argument("--prompts", type=int, default=5)
    parser.add_argument("--runtimes", default="llama.cpp,transformers")
    parser.add_argument("--out", default=str(ROOT / "benchmarks" / "results" /
                                             "local_llm_runtime.json"))
    args = parser.parse_args()
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    model = resolve_local_model("smollm2-135m")
    load_start = os.getloadavg()
    results: list[dict] = []
    for runtime in args.runtimes.split(","):  # the file is rewritten after each runtime
        results.append(measure(runtime, args.threads, args.max_new_tokens,
                               PROMPTS[:args.prompts]))
        out = report(args, model, results, load_start)
        Path(args.out).write_text(json.dumps(out, indent=2) + "\n", encoding="utf-8")
    print("| runtime | class | load s | time to first token s | tokens/s |")
    print("|---|---|---|---|---|")
    for r in results:
        print(f"| {r['runtime']} | {r['class']} | {r['load_s']} | {r['ttft_s']} | "
              f"{r['tokens_per_s']} |")
    print(f"load average {load_start} -> {out['machine']['loadavg_end']}; wrote {args.out}")
    return 0


def report(args: argparse.Namespace, model, results: list[dict], load_start) -> dict:
    fastest = max(results, key=lambda r: r["tokens_per_s"])
    return {
        "benchmark": "local_llm_runtime", "model": "smollm2-135m",
        "file": model.gguf_file, "threads": args.threads,
        "max_new_tokens": args.max_new_tokens, "decoding": "greedy",
        "results": results, "fastest": fastest["runtime"],
        "machine": machine_info(loadavg_start=load_start, loadavg_end=os.getloadavg()),
        "command": "flock /work/bench.lock .venv/bin/python benchmarks/local_llm_runtime.py "
                   f"--threads {args.threads} --prompts {args.prompts} "
                   f"--max-new-tokens {args.max_new_tokens}",
    }


if __name__ == "__main__":
    sys.exit(main())
