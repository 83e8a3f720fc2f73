"""A LoRA training loop for a small causal LM on the CPU: seeded, resumable, with progress.

Each pair is tokenised as ``prompt ids + target ids + EOS`` (the prompt rendered through the
template recorded in the manifest, both tokenised without special tokens, as the scorer does at
inference); the loss is on the target tokens and EOS only. Batches follow a seeded permutation
per epoch; the learning rate warms up linearly, then decays linearly to zero.

Resuming: every ``checkpoint_every`` steps the adapter weights, the AdamW state, the step, the
torch RNG state and the running statistics go to ``<out>/checkpoint/`` (written to a temporary
folder, then renamed, so a kill leaves the previous checkpoint intact). A run started again with
the same data and configuration continues from there and ends with the same adapter as an
uninterrupted run. Checkpoints are ``safetensors`` and JSON, plus the optimizer state read back
with ``torch.load(weights_only=True)`` (no pickle of arbitrary objects).

The result is ``<out>/``: the peft adapter (``adapter_config.json``,
``adapter_model.safetensors``), the tokenizer and ``kgrag_finetune.json``.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import resource
import shutil
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Callable, Sequence

from kgrag.finetune.model import MANIFEST, encode, eos_id
from kgrag.finetune.pairs import PROMPT_VERSIONS, TrainingPair

CHECKPOINT = "checkpoint"


@dataclass
class TrainConfig:
    """LoRA and optimisation settings (defaults sized for a 135M model on 2 CPU cores)."""

    lora_r: int = 8
    lora_alpha: int = 16
    lora_dropout: float = 0.05
    target_modules: tuple[str, ...] = ("q_proj", "k_proj", "v_proj", "o_proj")
    #: LoRA on the top N transformer layers only (None: all): the layers below need no
    #: backward pass at all, which is most of a step's cost on a CPU
    top_layers: int | None = None
    learning_rate: float = 1e-3
    weight_decay: float = 0.0
    batch_size: int = 8
    epochs: int = 1
    max_steps: int | None = None
    warmup_steps: int = 10
    max_length: int = 192
    checkpoint_every: int = 10
    seed: int = 0


@dataclass
class TrainReport:
    steps: int
    examples: int
    seconds: float
    examples_per_s: float
    peak_rss_mb: float
    final_loss: float
    losses: list[float] = field(default_factory=list)
    resumed_from: int = 0


def data_fingerprint(pairs: Sequence[TrainingPair]) -> str:
    digest = hashlib.sha256()
    for pair in pairs:
        digest.update(json.dumps([pair.prompt, pair.target]).encode())
    return digest.hexdigest()[:16]


def tokenize_pairs(tokenizer: Any, template: str, pairs: Sequence[TrainingPair],
                   max_length: int) -> list[tuple[list[int], int]]:
    """``(ids, n_prompt_tokens)`` per pair; over-long prompts are cut from the left so the
    target always stays whole."""
    eos = eos_id(tokenizer)
    out = []
    for pair in pairs:
        prompt = encode(tokenizer, template.format(question=pair.prompt))
        target = encode(tokenizer, pair.target) + [eos]
        room = max(1, max_length - len(target))
        prompt = prompt[-room:]
        out.append((prompt + target, len(prompt)))
    return out


def _batch(tokenized: Sequence[tuple[list[int], int]], pad: int) -> dict[str, Any]:
    import torch

    width = max(len(ids) for ids, _ in tokenized)
    ids = torch.full((len(tokenized), width), pad, dtype=torch.long)
    mask = torch.zeros((len(tokenized), width), dtype=torch.long)
    labels = torch.full((len(tokenized), width), -100, dtype=torch.long)
    for i, (row, n_prompt) in enumerate(tokenized):
        ids[i, :len(row)] = torch.tensor(row)
        mask[i, :len(row)] = 1
        labels[i, n_prompt:len(row)] = torch.tensor(row[n_prompt:])
    return {"input_ids": ids, "attention_mask": mask, "labels": labels}


def _order(n: int, epoch: int, seed: int) -> list[int]:
    import random

    order = list(range(n))
    random.Random(f"{seed}:{epoch}").shuffle(order)
    return order


def _lr_at(step: int, total: int, config: TrainConfig) -> float:
    if step < config.warmup_steps:
        return config.learning_rate * (step + 1) / config.warmup_steps
    rest = max(1, total - config.warmup_steps)
    return config.learning_rate * max(0.0, 1.0 - (step - config.warmup_steps) / rest)


def _layer_selection(model: Any, top_layers: int | None) -> dict[str, Any]:
    if not top_layers:
        return {}
    n = int(model.config.num_hidden_layers)
    return {"layers_to_transform": list(range(max(0, n - top_layers), n)),
            "layers_pattern": "layers"}


def peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def _save_checkpoint(model: Any, optimizer: Any, out: Path, state: dict[str, Any]) -> None:
    import torch
    from peft import get_peft_model_state_dict
    from safetensors.torch import save_file

    tmp = out / (CHECKPOINT + ".tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    weights = {k: v.detach().contiguous() for k, v in get_peft_model_state_dict(model).items()}
    save_file(weights, str(tmp / "adapter.safetensors"))
    torch.save(optimizer.state_dict(), tmp / "optimizer.pt")
    save_file({"torch_rng": torch.get_rng_state()}, str(tmp / "rng.safetensors"))
    (tmp / "state.json").write_text(json.dumps(state, indent=1), encoding="utf-8")
    final = out / CHECKPOINT
    old = out / (CHECKPOINT + ".old")
    shutil.rmtree(old, ignore_errors=True)
    if final.exists():
        final.rename(old)
    tmp.rename(final)
    shutil.rmtree(old, ignore_errors=True)


def _load_checkpoint(model: Any, optimizer: Any, out: Path, expect: dict[str, Any]
                     ) -> dict[str, Any] | None:
    """The saved state (model and optimizer restored) or ``None`` when there is none; raises
    ValueError when it belongs to other data or settings."""
    import torch
    from peft import set_peft_model_state_dict
    from safetensors.torch import load_file

    folder = out / CHECKPOINT
    if not (folder / "state.json").is_file():
        return None
    state: dict[str, Any] = json.loads((folder / "state.json").read_text(encoding="utf-8"))
    for key, value in expect.items():
        if state.get(key) != value:
            raise ValueError(f"{folder} is from another run ({key}: {state.get(key)!r} != "
                             f"{value!r}); delete it or use another --out")
    set_peft_model_state_dict(model, load_file(str(folder / "adapter.safetensors")))
    optimizer.load_state_dict(torch.load(folder / "optimizer.pt", weights_only=True))
    torch.set_rng_state(load_file(str(folder / "rng.safetensors"))["torch_rng"])
    return state


def train_lora(
    model: Any,
    tokenizer: Any,
    pairs: Sequence[TrainingPair],
    out_dir: str | Path,
    *,
    template: str,
    config: TrainConfig | None = None,
    manifest: dict[str, Any] | None = None,
    progress: bool = True,
    on_step: Callable[[int, float], None] | None = None,
) -> TrainReport:
    """Train a LoRA adapter on ``pairs`` and save it to ``out_dir`` (see the module docstring).

    ``model`` is the base causal LM (it gets the LoRA layers); ``template`` the prompt template
    (:func:`kgrag.finetune.model.prompt_template`); ``manifest`` extra fields for
    ``kgrag_finetune.json`` (base, method, data sources). ``on_step(step, loss)`` is called after
    each step (and after its checkpoint).
    """
    import torch
    from peft import LoraConfig, get_peft_model
    from tqdm.auto import tqdm

    config = config or TrainConfig()
    if not pairs:
        raise ValueError("no training pairs")
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    torch.manual_seed(config.seed)
    lora = LoraConfig(r=config.lora_r, lora_alpha=config.lora_alpha,
                      lora_dropout=config.lora_dropout, bias="none",
                      target_modules=list(config.target_modules), task_type="CAUSAL_LM",
                      **_layer_selection(model, config.top_layers))
    model = get_peft_model(model, lora)
    model.train()
    tokenized = tokenize_pairs(tokenizer, template, pairs, config.max_length)
    pad = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else eos_id(tokenizer)
    per_epoch = math.ceil(len(tokenized) / config.batch_size)
    total = config.max_steps or per_epoch * config.epochs
    params = [p for p in model.parameters() if p.requires_grad]
    optimizer = torch.optim.AdamW(params, lr=config.learning_rate,
                                  weight_decay=config.weight_decay)
    fingerprint = data_fingerprint(pairs)
    config_json = json.loads(json.dumps(asdict(config)))
    expect = {"data": fingerprint, "config": config_json, "template": template}
    state = _load_checkpoint(model, optimizer, out, expect) or {
        **expect, "step": 0, "losses": [], "seconds": 0.0, "examples": 0}
    start_step = int(state["step"])
    losses: list[float] = list(state["losses"])
    seconds = float(state["seconds"])
    examples = int(state.get("examples", 0))
    bar = tqdm(total=total, initial=start_step, desc="fine-tuning", unit="step",
               disable=not progress)
    for step in range(start_step, total):
        t0 = time.perf_counter()
        epoch, slot = divmod(step, per_epoch)
        order = _order(len(tokenized), epoch, config.seed)
        rows = [tokenized[i] for i in order[slot * config.batch_size:
                                             (slot + 1) * config.batch_size]]
        for group in optimizer.param_groups:
            group["lr"] = _lr_at(step, total, config)
        loss = model(**_batch(rows, pad)).loss
        loss.backward()
        torch.nn.utils.clip_grad_norm_(params, 1.0)
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        losses.append(round(float(loss.detach()), 5))
        seconds += time.perf_counter() - t0
        examples += len(rows)
        done = step + 1
        bar.update(1)
        bar.set_postfix(loss=f"{losses[-1]:.3f}")
        if done % config.checkpoint_every == 0 or done == total:
            _save_checkpoint(model, optimizer, out, {**expect, "step": done, "losses": losses,
                                                     "seconds": seconds, "examples": examples})
        if on_step is not None:
            on_step(done, losses[-1])
    bar.close()
    report = TrainReport(
        steps=total, examples=examples, seconds=round(seconds, 1),
        examples_per_s=round(examples / seconds, 3) if seconds else 0.0,
        peak_rss_mb=round(peak_rss_mb(), 1), final_loss=losses[-1] if losses else float("nan"),
        losses=losses, resumed_from=start_step)
    model.eval()
    model.save_pretrained(str(out))
    tokenizer.save_pretrained(str(out))
    base = str((manifest or {}).get("base", ""))
    if base.startswith("local:"):  # a portable base name for --llm local:DIR, not a local path
        config_path = out / "adapter_config.json"
        adapter_config = json.loads(config_path.read_text(encoding="utf-8"))
        adapter_config["base_model_name_or_path"] = base[len("local:"):]
        config_path.write_text(json.dumps(adapter_config, indent=2), encoding="utf-8")
    adapter_bytes = sum(f.stat().st_size for f in out.glob("adapter_model.*"))
    method = str((manifest or {}).get("method"))
    full_manifest = {
        "format": "kgrag-finetune/1", "prompt_version": PROMPT_VERSIONS.get(method, 1),
        "prompt_template": template, **(manifest or {}),
        "data": {**(manifest or {}).get("data", {}), "pairs": len(pairs),
                 "fingerprint": fingerprint},
        "config": config_json,
        "training": {k: v for k, v in asdict(report).items() if k != "losses"},
        "adapter_bytes": adapter_bytes,
        "threads": torch.get_num_threads(), "cpu_count": os.cpu_count(),
    }
    (out / MANIFEST).write_text(json.dumps(full_manifest, indent=1), encoding="utf-8")
    (out / "losses.json").write_text(json.dumps(losses), encoding="utf-8")
    return report
