"""Bulk name embedding in bfloat16 on CPUs with native bfloat16 instructions.

Why: embedding a graph's names is the slowest step before its first question, and float32
inference is already at the machine's limit: ONNX Runtime runs MiniLM at about the float32 FMA
peak of a core (docs/benchmarks-linking.md). CPUs with AVX512-BF16 or AMX execute bfloat16
matrix products at twice that rate (or more), and bfloat16 keeps float32's exponent range, so a
transformer's activations never overflow. Run under :func:`torch.autocast`, only the matrix
products are bfloat16; layer norms, softmax, pooling and normalisation stay float32. On
MetaQA's 43k names the vectors are at most ~1e-4 (1 - cosine) from float32's, against the
1e-3 bound kgrag keeps (:data:`MAX_ERROR`, checked on probe texts before a model is used this
way; a model that misses it falls back to float32).

Attention runs in the "eager" (plain matmul) form: names are 3-10 tokens long, where the fused
attention kernel costs more than the few multiplications it replaces (about 10 % of the time).

ONNX Runtime has no bfloat16 matrix kernels on x86 CPUs, so this path uses PyTorch; the float32
ONNX path stays the default for small inputs (a question, a few names), where loading PyTorch
would cost more than it saves (:data:`BULK_MIN_TEXTS`).
"""

from __future__ import annotations

import copy
import functools
import logging
import platform
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

logger = logging.getLogger("kgrag.embed")

#: Largest accepted ``1 - cosine`` between a bfloat16 vector and the float32 one of the same text.
MAX_ERROR = 1e-3
#: ``precision="auto"`` uses bfloat16 for inputs with at least this many distinct texts. Below
#: it, loading PyTorch and checking the model (about 4.5 s) costs more than bfloat16 saves over
#: float32 ONNX Runtime (measured break-even: ~8,000 names on one core, ~16,000 on two).
BULK_MIN_TEXTS = 20_000
#: Rows per batch: bfloat16 matrix products want more rows than float32 ones to reach their rate.
BATCH_SIZE = 128
PRECISIONS = ("auto", "float32", "bfloat16")
#: CPU flags (Linux ``/proc/cpuinfo``) that mean bfloat16 matrix products run natively.
NATIVE_BF16_FLAGS = frozenset({"avx512_bf16", "amx_bf16"})


@functools.cache
def cpu_has_native_bf16(cpuinfo: str = "/proc/cpuinfo") -> bool:
    """True when the CPU executes bfloat16 dot products natively (AVX512-BF16 or AMX-BF16).

    Read from the kernel's CPU flags on Linux x86; ``False`` elsewhere (emulated bfloat16 is
    slower than float32, so "auto" must not pick it on a guess).
    """
    if platform.system() != "Linux":
        return False
    try:
        text = Path(cpuinfo).read_text(encoding="utf-8", errors="replace")
    except OSError:
        return False
    for line in text.splitlines():
        if line.startswith("flags"):
            return bool(NATIVE_BF16_FLAGS & set(line.partition(":")[2].split()))
    return False


class Bf16SentenceEncoder:
    """A loaded ``SentenceTransformer`` run with bfloat16 matrix products (token ids -> vectors).

    A copy of the first module (the transformer; the model itself is left as it was) runs
    under ``torch.autocast(bfloat16)`` with its linear layers' weights stored in bfloat16; its
    token embeddings are turned back into float32 before the remaining modules (pooling,
    dense, normalise), so pooling sums are float32 sums.
    """

    def __init__(self, st_model: Any) -> None:
        import torch

        self._torch = torch
        self.model = st_model
        modules = list(st_model)
        if not modules:
            raise ValueError("the sentence-transformers model has no modules")
        # a private copy whose matrix weights are bfloat16 once and for all: autocast would
        # otherwise cast every weight again for every batch (8 % of the time on names);
        # layer norms keep float32 weights and run in float32 under autocast
        self.transformer = copy.deepcopy(modules[0]).eval()
        for module in self.transformer.modules():
            if isinstance(module, torch.nn.Linear):
                module.to(torch.bfloat16)
        self.rest = modules[1:]
        auto_model = getattr(self.transformer, "auto_model", None)
        setter = getattr(auto_model, "set_attn_implementation", None)
        if setter is not None:
            try:
                setter("eager")
            except Exception as exc:  # noqa: BLE001 - a model without it keeps its own kernel
                logger.debug("keeping the model's attention kernel: %s", exc)
        tokenizer = st_model.tokenizer
        self.tokenizer = tokenizer
        self.inputs = tuple(getattr(tokenizer, "model_input_names",
                                    ("input_ids", "attention_mask")))
        self.max_length = int(getattr(st_model, "max_seq_length", None) or 512)
        self.pad_id = int(getattr(tokenizer, "pad_token_id", None) or 0)

    def tokenize(self, texts: Sequence[str]) -> list[list[int]]:
        encoded = self.tokenizer(list(texts), add_special_tokens=True, truncation=True,
                                 max_length=self.max_length)
        return [list(ids) for ids in encoded["input_ids"]]

    def encode(self, texts: Sequence[str], *, batch_size: int = BATCH_SIZE,
               progress: Any = None) -> np.ndarray:
        """Vectors of ``texts`` (length-sorted, deduplicated batches).

        With PyTorch set to ``n > 1`` threads, ``n`` batches run at once on one thread each
        rather than one batch on ``n`` threads: a batch of names is a few hundred rows, too
        small to split well (2 cores: 2,700 against 2,100-2,400 names/s). PyTorch's thread
        setting is restored afterwards.
        """
        from kgrag.embed.onnx_backend import encode_sorted

        torch = self._torch
        threads = torch.get_num_threads()
        try:
            return encode_sorted(self.tokenize(texts), self.run, batch_size=batch_size,
                                 pad_id=self.pad_id, progress=progress, workers=threads,
                                 worker_init=lambda: torch.set_num_threads(1))
        finally:
            torch.set_num_threads(threads)

    def run(self, ids: np.ndarray, mask: np.ndarray) -> np.ndarray:
        """Padded int64 ``ids`` / ``mask`` (batch, width) -> float32 (batch, dim) vectors."""
        torch = self._torch
        features = self._features(ids, mask)
        with torch.inference_mode():
            with torch.autocast("cpu", dtype=torch.bfloat16):
                features = self.transformer(features)
            features = {k: (v.float() if torch.is_tensor(v) and v.is_floating_point() else v)
                        for k, v in features.items()}
            for module in self.rest:
                features = module(features)
            vectors = features["sentence_embedding"].float()
        return vectors.numpy()

    def _features(self, ids: np.ndarray, mask: np.ndarray) -> dict[str, Any]:
        """The model's input dict for padded int64 ``ids`` / ``mask``."""
        torch = self._torch
        ids_t = torch.from_numpy(np.ascontiguousarray(ids, dtype=np.int64))
        features: dict[str, Any] = {"input_ids": ids_t,
                                    "attention_mask": torch.from_numpy(
                                        np.ascontiguousarray(mask, dtype=np.int64))}
        if "token_type_ids" in self.inputs:
            features["token_type_ids"] = torch.zeros_like(ids_t)
        return features

    def float32_run(self, ids: np.ndarray, mask: np.ndarray) -> np.ndarray:
        """The model's own float32 pipeline (the reference :meth:`verify` compares with)."""
        torch = self._torch
        features = self._features(ids, mask)
        with torch.inference_mode():
            for module in self.model:
                features = module(features)
            return features["sentence_embedding"].float().numpy()

    def verify(self, texts: Sequence[str]) -> float:
        """Largest ``1 - cosine`` between bfloat16 and float32 vectors of ``texts``; raises
        ``ValueError`` above :data:`MAX_ERROR`."""
        from kgrag.embed.onnx_backend import encode_sorted

        tokens = self.tokenize(texts)
        low = encode_sorted(tokens, self.run, batch_size=BATCH_SIZE, pad_id=self.pad_id)
        ref = encode_sorted(tokens, self.float32_run, batch_size=BATCH_SIZE, pad_id=self.pad_id)
        error = max_cosine_error(ref, low)
        if not error <= MAX_ERROR:
            raise ValueError(f"bfloat16 vectors are {error:.2e} (1 - cosine) from float32's, "
                             f"above the {MAX_ERROR:g} bound")
        return error


def max_cosine_error(reference: np.ndarray, other: np.ndarray) -> float:
    """Largest ``1 - cosine`` between matching rows of two matrices."""
    a = reference / np.maximum(np.linalg.norm(reference, axis=1, keepdims=True), 1e-12)
    b = other / np.maximum(np.linalg.norm(other, axis=1, keepdims=True), 1e-12)
    return float(np.max(1.0 - np.sum(a * b, axis=1))) if len(a) else 0.0
