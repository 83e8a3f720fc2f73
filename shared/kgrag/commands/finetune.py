"""``kgrag finetune``: LoRA-fine-tune a small local model for one method's LLM step (CPU).

Builds the training pairs (:mod:`kgrag.finetune.pairs`), trains a LoRA adapter
(:mod:`kgrag.finetune.train`) and saves it with a manifest; see docs/finetune.md.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from kgrag.commands.common import add_command
from kgrag.errors import ConfigurationError
from kgrag.finetune import METHODS


def _config(args: argparse.Namespace) -> Any:
    from kgrag.finetune.train import TrainConfig

    config = TrainConfig(seed=args.seed, batch_size=args.batch_size, epochs=args.epochs,
                         max_steps=args.steps, learning_rate=args.lr, lora_r=args.lora_r,
                         lora_alpha=args.lora_alpha, checkpoint_every=args.checkpoint_every,
                         top_layers=args.top_layers or None)
    if config.batch_size < 1 or config.epochs < 1 or (config.max_steps or 1) < 1:
        raise ConfigurationError("--batch-size, --epochs and --steps must be at least 1")
    return config


def _cmd_finetune(args: argparse.Namespace) -> int:
    from kgrag.finetune.pairs import read_pairs, write_pairs
    from kgrag.finetune.run import build_training_pairs, finetune

    config = _config(args)
    if args.threads:
        import torch

        torch.set_num_threads(args.threads)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    pairs_file = out / "pairs.jsonl"
    if pairs_file.is_file():  # a resumed run trains on exactly the pairs it started with
        pairs = read_pairs(pairs_file)
        summary = json.loads((out / "pairs_summary.json").read_text(encoding="utf-8"))
        print(f"{len(pairs)} training pairs from {pairs_file} (resuming)")
    else:
        data_root = Path(args.data_root) if args.data_root else None
        pairs, summary = build_training_pairs(
            args.method, args.train, data_root=data_root, graph=args.graph,
            heldout=args.heldout, limit=args.limit, seed=args.seed)
        write_pairs(pairs, pairs_file)
        (out / "pairs_summary.json").write_text(json.dumps(summary, indent=1), encoding="utf-8")
        for source, counts in summary.items():
            print(f"{source}: {counts['pairs']} pairs from {counts['questions']} questions "
                  f"({counts['dropped']} dropped)")
    if args.pairs_only:
        return 0
    report = finetune(args.method, args.base, pairs, out, config=config, sources=summary)
    print(f"trained {report.steps} steps ({report.examples} examples) in {report.seconds:.0f} s: "
          f"{report.examples_per_s:.2f} examples/s, peak RSS {report.peak_rss_mb:.0f} MB, "
          f"final loss {report.final_loss:.4f}; adapter in {out}")
    return 0


def register(subparsers: Any) -> None:
    parser = add_command(
        subparsers, "finetune", help="LoRA-fine-tune a small local model for a method (CPU)",
        description="""
            Train a LoRA adapter on a small causal LM for one method's LLM step: GraphRAFT's
            query selector (L1, the paper's training data synthesised from gold answers),
            UltRAG's query writer or SimGRAG's pattern writer (the oracles' output for gold
            paths). Training runs on the CPU in float32, shows a progress bar, checkpoints
            every --checkpoint-every steps and resumes when started again with the same --out.
            Dataset names train on every question except the evaluation sample the harness
            tests (300 questions, seed 0), which is never seen in training.
            """,
        examples=[
            "kgrag finetune --method graphraft --base local:smollm2-135m "
            "--train metaqa-1hop metaqa-2hop pq-2h --limit 400 --out runs/graphraft-l1",
            "kgrag finetune --method ultrag --base ./SmolLM2-135M-Instruct "
            "--train qa.jsonl --graph kb.tsv --heldout test.jsonl --out runs/ultrag",
        ],
        notes="Needs torch, transformers and peft (pip install 'kgrag[finetune]'); a GGUF "
              "base also needs gguf.")
    parser.add_argument("--method", required=True, choices=METHODS,
                        help="(required) whose LLM step to train: GraphRAFT's query selector, "
                             "UltRAG's query writer or SimGRAG's pattern writer")
    parser.add_argument("--base", default="local:smollm2-135m",
                        help="base model: local:smollm2-135m, a model folder or a .gguf file")
    parser.add_argument("--train", nargs="+", required=True, metavar="SOURCE",
                        help="(required) harness dataset names (metaqa-1hop, metaqa-2hop, "
                             "pq-2h ...) or "
                             "QA JSONL files (with --graph)")
    parser.add_argument("--out", required=True,
                        help="(required) folder for the adapter and checkpoints")
    parser.add_argument("--graph", default=None, help="the graph of QA file sources")
    parser.add_argument("--heldout", default=None,
                        help="a QA JSONL file of test questions that must not be in the training "
                             "files (checked; dataset names are checked against their own split)")
    parser.add_argument("--data-root", default=None, help="datasets folder (default: $KGRAG_DATA)")
    parser.add_argument("--limit", type=int, default=None,
                        help="training questions per source (seeded sample)")
    parser.add_argument("--steps", type=int, default=None,
                        help="optimizer steps (default: --epochs over the pairs)")
    parser.add_argument("--epochs", type=int, default=1, help="passes over the pairs")
    parser.add_argument("--batch-size", type=int, default=8, help="pairs per optimizer step")
    parser.add_argument("--lr", type=float, default=1e-3, help="peak learning rate (AdamW)")
    parser.add_argument("--lora-r", type=int, default=8, help="LoRA rank")
    parser.add_argument("--lora-alpha", type=int, default=16, help="LoRA alpha (scale)")
    parser.add_argument("--top-layers", type=int, default=12,
                        help="LoRA on the top N transformer layers only (0: all); the layers "
                             "below then need no backward pass")
    parser.add_argument("--checkpoint-every", type=int, default=10,
                        help="steps between checkpoints (a rerun resumes from the last)")
    parser.add_argument("--seed", type=int, default=0,
                        help="seed of the question sample, batch order and LoRA init")
    parser.add_argument("--threads", type=int, default=None, help="torch CPU threads")
    parser.add_argument("--pairs-only", action="store_true",
                        help="write pairs.jsonl and stop (no model needed)")
    parser.set_defaults(func=_cmd_finetune)
