"""Fine-tune GraphRAFT's query selector (L1) or answer model (L2) with LoRA (optional; not run in
CI).

Input: the chat-format JSONL written by ``kgrag graphraft export-training-data``
(``selector.jsonl`` for L1, ``answer.jsonl`` for L2). Output: a LoRA adapter directory. Needs a
GPU for real models; the extra packages are not kgrag dependencies::

    pip install "kgrag[graphraft-finetune]"        # peft, trl, datasets, accelerate
    pip install bitsandbytes                        # only for --qlora (CUDA)

    kgrag graphraft export-training-data kb.tsv qa.jsonl data/ --limit 1000
    python examples/graphraft_finetune.py selector data/selector.jsonl runs/l1 \\
        --model neo4j/text2cypher-gemma-2-9b-it-finetuned-2024v1 --qlora --bf16

Defaults are the GraphRAFT reference code's (the paper gives no hyperparameters):

* ``selector`` (L1): QLoRA 4-bit NF4 with double quantisation (``--qlora``), LoRA r=64,
  alpha=64, dropout 0.05, PEFT's default target modules, loss on the whole text, 1 epoch,
  lr 2e-5. (The reference code also keeps the best checkpoint by validation loss; with one epoch
  that is the final model, which is what is saved here.)
* ``answer`` (L2): LoRA r=64, alpha=64 on all attention and MLP projections, loss on the
  completion only, 1 epoch, lr 2e-5, gradient accumulation 4, warm-up 5 steps, weight decay
  0.01, linear schedule.

Using the trained selector for constrained decoding (any causal LM works the same way)::

    from peft import PeftModel
    from transformers import AutoModelForCausalLM, AutoTokenizer
    from kgrag.methods.graphraft.decoding import TransformersTokenScorer, chat_prompt_template
    from kgrag.methods.graphraft.pipeline import GraphRAFT

    tokenizer = AutoTokenizer.from_pretrained("runs/l1")
    model = PeftModel.from_pretrained(AutoModelForCausalLM.from_pretrained(BASE), "runs/l1").eval()
    scorer = TransformersTokenScorer(model, tokenizer,
                                     prompt_template=chat_prompt_template(tokenizer))
    method = GraphRAFT(kg, token_scorer=scorer, llm=chat_model)   # chat_model: L0 and L2

Importing this module needs none of the training packages; :func:`require_training_stack` says
what is missing when training starts.
"""

from __future__ import annotations

import argparse
import importlib
import importlib.util
import json
import random
import sys
from pathlib import Path
from typing import Any

TRAINING_PACKAGES = ("peft", "trl", "datasets", "accelerate")

#: Reference-code hyperparameters per model role.
PAPER_DEFAULTS: dict[str, dict[str, Any]] = {
    "selector": {"lora_r": 64, "lora_alpha": 64, "lora_dropout": 0.05, "target_modules": None,
                 "learning_rate": 2e-5, "epochs": 1.0, "grad_accum": 1, "warmup_steps": 0,
                 "weight_decay": 0.0, "completion_only": False, "max_length": 1024},
    "answer": {"lora_r": 64, "lora_alpha": 64, "lora_dropout": 0.0,
               "target_modules": ["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj",
                                  "up_proj", "down_proj"],
               "learning_rate": 2e-5, "epochs": 1.0, "grad_accum": 4, "warmup_steps": 5,
               "weight_decay": 0.01, "completion_only": True, "max_length": 15000},
}


def require_training_stack() -> dict[str, Any]:
    """Import peft, trl, datasets and accelerate, or raise ImportError naming what to install."""
    missing = [name for name in TRAINING_PACKAGES if importlib.util.find_spec(name) is None]
    if missing:
        raise ImportError(
            f"fine-tuning needs {', '.join(missing)} (not kgrag dependencies): "
            f"pip install 'kgrag[graphraft-finetune]'  (or: pip install {' '.join(missing)})")
    return {name: importlib.import_module(name) for name in TRAINING_PACKAGES}


def load_chat_records(path: str | Path, limit: int | None = None) -> list[dict[str, Any]]:
    """Validated ``{"messages": [user, assistant]}`` records; raises ValueError naming the line."""
    records = []
    with open(path, encoding="utf-8") as handle:
        for number, line in enumerate(handle, start=1):
            if not line.strip():
                continue
            try:
                record = json.loads(line)
            except json.JSONDecodeError as exc:
                raise ValueError(f"{path}:{number}: not JSON ({exc})") from None
            messages = record.get("messages") if isinstance(record, dict) else None
            if (not isinstance(messages, list) or len(messages) < 2
                    or not all(isinstance(m, dict) and isinstance(m.get("content"), str)
                               and m.get("role") in ("system", "user", "assistant")
                               for m in messages)
                    or messages[-1]["role"] != "assistant"):
                raise ValueError(f"{path}:{number}: expected chat messages ending with the "
                                 "assistant's answer")
            records.append({"messages": messages})
            if limit is not None and len(records) >= limit:
                break
    if not records:
        raise ValueError(f"{path} holds no records")
    return records


def split_records(records: list[dict[str, Any]], eval_fraction: float, seed: int
                  ) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """A seeded train/eval split (eval empty when the fraction is 0 or there are < 10 records)."""
    if eval_fraction <= 0 or len(records) < 10:
        return records, []
    order = list(range(len(records)))
    random.Random(seed).shuffle(order)
    n_eval = max(1, int(round(eval_fraction * len(records))))
    eval_ids = set(order[:n_eval])
    return ([r for i, r in enumerate(records) if i not in eval_ids],
            [r for i, r in enumerate(records) if i in eval_ids])


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("role", choices=sorted(PAPER_DEFAULTS),
                        help="selector = L1 (selector.jsonl), answer = L2 (answer.jsonl)")
    parser.add_argument("data", help="chat JSONL from kgrag graphraft export-training-data")
    parser.add_argument("output", help="directory for the LoRA adapter")
    parser.add_argument("--model", required=True, help="base causal LM (hub name or local path)")
    parser.add_argument("--qlora", action="store_true",
                        help="load the base model in 4-bit NF4 (bitsandbytes, CUDA)")
    parser.add_argument("--bf16", action="store_true", help="bf16 compute")
    parser.add_argument("--batch-size", type=int, default=1)
    parser.add_argument("--max-length", type=int, default=None,
                        help="tokens per example (default 1024 for selector; 15,000 for answer, "
                             "as in the paper repo); longer examples are truncated")
    parser.add_argument("--eval-fraction", type=float, default=0.1)
    parser.add_argument("--limit", type=int, default=None, help="use the first N records")
    parser.add_argument("--max-steps", type=int, default=-1, help="stop after N steps (smoke runs)")
    parser.add_argument("--seed", type=int, default=0)
    for key, kind in (("lora_r", int), ("lora_alpha", int), ("lora_dropout", float),
                      ("learning_rate", float), ("epochs", float), ("grad_accum", int),
                      ("warmup_steps", int), ("weight_decay", float)):
        parser.add_argument("--" + key.replace("_", "-"), type=kind, default=None,
                            help=f"default: {PAPER_DEFAULTS['selector'][key]} (selector), "
                                 f"{PAPER_DEFAULTS['answer'][key]} (answer)")
    parser.add_argument("--target-modules", type=lambda text: text.split(","), default=None,
                        help="comma-separated module names for LoRA (default: see above)")
    args = parser.parse_args(argv)
    for key, value in PAPER_DEFAULTS[args.role].items():
        if getattr(args, key, None) is None:
            setattr(args, key, value)
    return args


def train(args: argparse.Namespace) -> Path:
    """Fine-tune and save the adapter (and tokenizer) to ``args.output``; returns that path."""
    stack = require_training_stack()
    datasets, peft, trl = stack["datasets"], stack["peft"], stack["trl"]
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    records = load_chat_records(args.data, args.limit)
    train_records, eval_records = split_records(records, args.eval_fraction, args.seed)
    tokenizer = AutoTokenizer.from_pretrained(args.model)
    if tokenizer.pad_token is None:
        tokenizer.pad_token = tokenizer.eos_token
    model_kwargs: dict[str, Any] = {}
    if args.qlora:
        from transformers import BitsAndBytesConfig

        model_kwargs["quantization_config"] = BitsAndBytesConfig(
            load_in_4bit=True, bnb_4bit_quant_type="nf4", bnb_4bit_use_double_quant=True,
            bnb_4bit_compute_dtype=torch.bfloat16 if args.bf16 else torch.float16)
    model = AutoModelForCausalLM.from_pretrained(args.model, **model_kwargs)
    lora = peft.LoraConfig(r=int(args.lora_r), lora_alpha=int(args.lora_alpha),
                           lora_dropout=float(args.lora_dropout), bias="none",
                           target_modules=args.target_modules, task_type="CAUSAL_LM")
    has_eval = bool(eval_records)
    config = trl.SFTConfig(
        output_dir=args.output, num_train_epochs=float(args.epochs), max_steps=args.max_steps,
        learning_rate=float(args.learning_rate), per_device_train_batch_size=args.batch_size,
        gradient_accumulation_steps=int(args.grad_accum), warmup_steps=int(args.warmup_steps),
        weight_decay=float(args.weight_decay), lr_scheduler_type="linear",
        max_length=args.max_length, assistant_only_loss=False,
        completion_only_loss=bool(args.completion_only), bf16=args.bf16,
        eval_strategy="epoch" if has_eval else "no", save_strategy="no", logging_steps=10,
        seed=args.seed, report_to=[])
    trainer = trl.SFTTrainer(
        model=model, args=config, processing_class=tokenizer, peft_config=lora,
        train_dataset=datasets.Dataset.from_list(_prompt_completion(train_records)),
        eval_dataset=datasets.Dataset.from_list(_prompt_completion(eval_records)) if has_eval
        else None)
    trainer.train()
    trainer.save_model(args.output)
    tokenizer.save_pretrained(args.output)
    return Path(args.output)


def _prompt_completion(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Conversational prompt/completion rows (TRL applies the chat template; the completion-only
    loss then covers exactly the assistant's answer)."""
    return [{"prompt": r["messages"][:-1], "completion": r["messages"][-1:]} for r in records]


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    try:
        out = train(args)
    except ImportError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    print(f"adapter saved to {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
