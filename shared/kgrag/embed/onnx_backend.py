"""ONNX Runtime inference for sentence-transformers models, exported locally (no model hub).

Why: embedding a graph's names is the slowest step before a graph can answer its first question.
Entity names are short (MetaQA: 5.2 tokens with [CLS]/[SEP]), so batches in input order are about
half padding, and PyTorch runs short sequences less efficiently than long ones; ONNX Runtime on
length-sorted, deduplicated batches runs the same float32 graph 2.0-2.2x as fast as the previous
PyTorch path (docs/benchmarks-linking.md, "Embedding throughput"). The vectors
are the same model's, within about 1e-6 cosine (checked after every export, and by tests).

Why float32 and not int8: dynamic int8 quantisation of this model is 2.4x faster again, but its
vectors are up to 4.9e-2 (1 - cosine) from float32 on MetaQA's names even in its most careful ONNX
Runtime form (weight MatMuls only, per-channel), still 1.5e-2 with per-token activation scales (on
3,000 of them); quantising only the query/key/value projections gives 8.7e-3. The bound kgrag keeps
is 1e-3 on every name, so there is no int8 export.

How: the first time a model is used, its whole sentence-transformers pipeline (transformer,
pooling, normalisation) is traced once with ``torch.onnx.export`` into
``<cache>/models/<model>-<fingerprint>/model.onnx`` next to a JSON manifest, and compared with
the PyTorch model on probe texts; an export that disagrees is discarded (PyTorch is then used).
Later processes load only ONNX Runtime and the ``tokenizers`` tokenizer: no torch import, so the
model is ready in well under a second. Needs the ``onnx`` extra (``onnxruntime``, ``onnx``);
without it :class:`~kgrag.embed.SentenceTransformerEmbedder` uses PyTorch as before.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import shutil
import tempfile
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

logger = logging.getLogger("kgrag.embed")

FORMAT = "kgrag-onnx-export"
FORMAT_VERSION = 1
#: An export is kept only if every probe text's vector is this close (1 - cosine) to PyTorch's.
MAX_EXPORT_ERROR = 1e-5
PROBE_TEXTS = (
    "Tokyo Godfathers", "film.film.directed_by", "Ginger Rogers",
    "Who directed the movies written by the screenwriter of Paprika?",
    "Åsa Ångström — naïve café, 東京", " padded   text ", "x",
    "a long sentence " * 40,
)
_SKIP_FILES = {"README.md", ".gitattributes"}
#: :meth:`OnnxSentenceEncoder.encode` runs batches side by side from this many per thread on
BULK_BATCHES = 4


def available() -> bool:
    """True when ONNX Runtime can be imported (the ``onnx`` extra is installed)."""
    import importlib.util

    return importlib.util.find_spec("onnxruntime") is not None


def model_fingerprint(model_dir: str | os.PathLike[str]) -> str:
    """SHA-256 over a local model directory's files (relative path, size, content).

    The content hash is what makes caches safe: a changed weight file, tokenizer or pooling
    config gives a new fingerprint, hence new cache keys. About 0.1 s for MiniLM's 90 MB.
    """
    root = Path(model_dir)
    digest = hashlib.sha256()
    for path in sorted(p for p in root.rglob("*") if p.is_file()):
        rel = path.relative_to(root).as_posix()
        if path.name in _SKIP_FILES or "__pycache__" in rel or rel.startswith("onnx/"):
            continue
        digest.update(rel.encode("utf-8") + b"\0")
        digest.update(path.stat().st_size.to_bytes(8, "little"))
        with open(path, "rb") as fh:
            digest.update(hashlib.file_digest(fh, "sha256").digest())
    return digest.hexdigest()


class OnnxSentenceEncoder:
    """Token ids -> sentence vectors with ONNX Runtime, for one exported model directory."""

    def __init__(self, export_dir: str | os.PathLike[str], *, threads: int | None = None) -> None:
        from tokenizers import Tokenizer

        self.export_dir = Path(export_dir)
        manifest = json.loads((self.export_dir / "manifest.json").read_text(encoding="utf-8"))
        if manifest.get("format") != FORMAT or manifest.get("version") != FORMAT_VERSION:
            raise ValueError(f"{self.export_dir} is not a kgrag ONNX export")
        self.manifest = manifest
        self.inputs: list[str] = list(manifest["inputs"])
        self.dimension = int(manifest["dimension"])
        self.max_length = int(manifest["max_seq_length"])
        self.pad_id = int(manifest.get("pad_token_id", 0))
        tokenizer = Tokenizer.from_file(str(self.export_dir / "tokenizer.json"))
        tokenizer.no_padding()
        tokenizer.enable_truncation(self.max_length)
        self.tokenizer = tokenizer
        #: ONNX Runtime's intra-op threads (0: one per physical core)
        self.threads = threads if threads is not None else _thread_setting()
        self.session = self._session(self.threads)
        self._single: Any = None  # one-thread session for bulk input (see encode)
        self._single_lock = threading.Lock()

    def _session(self, threads: int) -> Any:
        import onnxruntime as ort

        options = ort.SessionOptions()
        options.intra_op_num_threads = threads
        options.inter_op_num_threads = 1
        # idle ORT workers would otherwise busy-wait after each run and slow whatever comes next
        # (the next question's graph search, or PyTorch if both are used)
        options.add_session_config_entry("session.intra_op.allow_spinning", "0")
        options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        return ort.InferenceSession(str(self.export_dir / "model.onnx"), options,
                                    providers=["CPUExecutionProvider"])

    def tokenize(self, texts: Sequence[str]) -> list[list[int]]:
        return [enc.ids for enc in self.tokenizer.encode_batch(list(texts))]

    def run(self, ids: np.ndarray, mask: np.ndarray, *, session: Any = None) -> np.ndarray:
        feeds = {"input_ids": ids, "attention_mask": mask}
        if "token_type_ids" in self.inputs:
            feeds["token_type_ids"] = np.zeros_like(ids)
        return (session or self.session).run(None, {k: feeds[k] for k in self.inputs})[0]

    def run_single(self, ids: np.ndarray, mask: np.ndarray) -> np.ndarray:
        """:meth:`run` on a one-thread session (created on first use), for batches run side by
        side on several threads."""
        if self._single is None:
            with self._single_lock:
                if self._single is None:
                    self._single = self._session(1)
        return self.run(ids, mask, session=self._single)

    def parallel_batches(self) -> int:
        """How many batches :meth:`encode` runs side by side: the intra-op thread count (the
        CPUs this process may use when it is 0, ONNX Runtime's default)."""
        if self.threads > 0:
            return self.threads
        try:
            return max(1, len(os.sched_getaffinity(0)))
        except AttributeError:  # pragma: no cover - not Linux
            return max(1, os.cpu_count() or 1)

    def encode(self, token_ids: Sequence[Sequence[int]], *, batch_size: int,
               progress: Any = None) -> np.ndarray:
        """Vectors of tokenised texts (:func:`encode_sorted`). Bulk input (at least
        :data:`BULK_BATCHES` batches per thread) runs whole batches side by side, one thread
        each, instead of splitting every batch's small matrix products over the threads:
        names are ~5 tokens, so a batch's products are too small to split well (4,000 MetaQA
        names on an AVX2-only 2-core EPYC under load ~11: 28-32 s wall and 7.8-8.5 CPU-s side by
        side against 36-37 s and 9.0-9.8 CPU-s with one two-thread session, batch sizes 16-64).
        The same vectors either way (within float32 rounding, ~1e-7 cosine)."""
        workers = self.parallel_batches()
        batches = -(-len(token_ids) // batch_size)
        if workers > 1 and batches >= BULK_BATCHES * workers:
            return encode_sorted(token_ids, self.run_single, batch_size=batch_size,
                                 pad_id=self.pad_id, progress=progress, workers=workers)
        return encode_sorted(token_ids, self.run, batch_size=batch_size, pad_id=self.pad_id,
                             progress=progress)


def _thread_setting() -> int:
    """ONNX Runtime threads: ``OMP_NUM_THREADS`` when set (as PyTorch honours it), else 0
    (ONNX Runtime's default: one per physical core)."""
    try:
        return max(0, int(os.environ.get("OMP_NUM_THREADS", "0")))
    except ValueError:
        return 0


def export_dir_for(cache_root: Path, name: str, fingerprint: str) -> Path:
    slug = "".join(c if c.isalnum() or c in "-_." else "_" for c in name)[:60]
    return cache_root / "models" / f"{slug}-{fingerprint[:16]}-onnx"


def export(st_model: Any, model_dir: str | os.PathLike[str], target: Path, *,
           fingerprint: str) -> Path:
    """Trace ``st_model`` into ``target`` (model.onnx, tokenizer.json, manifest.json), verified
    against PyTorch on :data:`PROBE_TEXTS`; atomic (built in a temporary sibling, then renamed).

    Raises ``ValueError`` when the export does not reproduce the PyTorch vectors or tokens.
    """
    import torch

    model_dir = Path(model_dir)
    if not (model_dir / "tokenizer.json").is_file():
        raise ValueError(f"{model_dir} has no tokenizer.json (a fast tokenizer is needed)")
    tokenizer = st_model.tokenizer
    input_names = [n for n in ("input_ids", "token_type_ids", "attention_mask")
                   if n in getattr(tokenizer, "model_input_names", ("input_ids", "attention_mask"))]
    if "input_ids" not in input_names or "attention_mask" not in input_names:
        raise ValueError(f"unsupported tokenizer inputs {tokenizer.model_input_names}")

    class _Pipeline(torch.nn.Module):
        """The whole sentence-transformers pipeline as one traceable module."""

        def __init__(self) -> None:
            super().__init__()
            self.st = st_model

        def forward(self, *tensors: torch.Tensor) -> torch.Tensor:
            features = dict(zip(input_names, tensors))
            return self.st(features)["sentence_embedding"]

    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(dir=target.parent, prefix=target.name + ".tmp"))
    try:
        example = _features(st_model, ["an example", "a second example text"])
        args = tuple(example[n] for n in input_names)
        axes = {n: {0: "batch", 1: "tokens"} for n in input_names}
        axes["sentence_embedding"] = {0: "batch"}
        import warnings

        with warnings.catch_warnings(), torch.inference_mode(False), torch.no_grad():
            warnings.simplefilter("ignore")  # tracer warnings about python bools are expected
            torch.onnx.export(_Pipeline().eval(), args, str(tmp / "model.onnx"), dynamo=False,
                              input_names=input_names, output_names=["sentence_embedding"],
                              dynamic_axes=axes, opset_version=17)
        shutil.copyfile(model_dir / "tokenizer.json", tmp / "tokenizer.json")
        manifest = {
            "format": FORMAT, "version": FORMAT_VERSION, "model_fingerprint": fingerprint,
            "inputs": input_names, "dimension": int(_dimension(st_model)),
            "max_seq_length": int(st_model.max_seq_length),
            "pad_token_id": int(tokenizer.pad_token_id or 0),
            "torch": torch.__version__,
        }
        (tmp / "manifest.json").write_text(json.dumps(manifest, indent=2), encoding="utf-8")
        error = _verify(st_model, OnnxSentenceEncoder(tmp))
        manifest["verified_max_1_minus_cos"] = error
        (tmp / "manifest.json").write_text(json.dumps(manifest, indent=2), encoding="utf-8")
        try:
            os.replace(tmp, target)
        except OSError:
            if (target / "manifest.json").is_file():  # another process finished first
                shutil.rmtree(tmp, ignore_errors=True)
                return target
            shutil.rmtree(target, ignore_errors=True)  # a damaged leftover: replace it
            os.replace(tmp, target)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return target


def _features(st_model: Any, texts: list[str]) -> dict[str, Any]:
    """The model's own tokenisation of ``texts`` (``preprocess`` in newer sentence-transformers,
    ``tokenize`` before)."""
    prepare = getattr(st_model, "preprocess", None) or st_model.tokenize
    return prepare(texts)


def _dimension(st_model: Any) -> int:
    getter = (getattr(st_model, "get_embedding_dimension", None)
              or st_model.get_sentence_embedding_dimension)
    return int(getter())


def _verify(st_model: Any, encoder: OnnxSentenceEncoder) -> float:
    """Largest 1 - cosine between PyTorch and ONNX vectors of :data:`PROBE_TEXTS`; raises
    ``ValueError`` above :data:`MAX_EXPORT_ERROR` or when the token ids differ."""
    texts = list(PROBE_TEXTS)
    ref_tokens = _features(st_model, texts)
    ref_ids = ref_tokens["input_ids"].tolist()
    ref_mask = ref_tokens["attention_mask"].tolist()
    ours = encoder.tokenize(texts)
    for text, ids, row, mask in zip(texts, ours, ref_ids, ref_mask):
        if ids != [t for t, m in zip(row, mask) if m]:
            raise ValueError(f"the tokenizers tokenizer disagrees with the model's on {text!r}")
    ref = st_model.encode(texts, convert_to_numpy=True, normalize_embeddings=True,
                          show_progress_bar=False)
    got = encode_sorted(encoder.tokenize(texts), encoder.run, batch_size=4,
                        pad_id=encoder.pad_id)
    got /= np.linalg.norm(got, axis=1, keepdims=True)
    error = float(np.max(1.0 - np.sum(ref * got, axis=1)))
    if not error <= MAX_EXPORT_ERROR:
        raise ValueError(f"the ONNX export differs from PyTorch by {error:.2e} (1 - cosine)")
    return error


def encode_sorted(token_ids: Sequence[Sequence[int]], run: Any, *, batch_size: int,
                  pad_id: int = 0, progress: Any = None, workers: int = 1,
                  worker_init: Any = None) -> np.ndarray:
    """Vectors of tokenised texts, computed in batches of similar length, each distinct token
    sequence once.

    Sorting by length keeps padding (wasted work) small; identical token sequences (e.g. names
    differing only in case for an uncased model) give identical vectors, so they are run once.
    ``run(ids, mask)`` maps padded int64 arrays to a (batch, dim) float array. ``progress`` (a
    tqdm bar or ``None``) is advanced by the number of input texts each batch covers.

    ``workers > 1`` runs batches on that many threads at once (``run`` must be thread-safe;
    ``worker_init()`` is called once in each thread first); results are placed by row, so the
    output is the same. Ctrl-C cancels the batches not yet started.
    """
    n = len(token_ids)
    first: dict[tuple[int, ...], int] = {}
    owner = np.empty(n, dtype=np.int64)
    for i, sequence in enumerate(token_ids):
        owner[i] = first.setdefault(tuple(sequence), len(first))
    uniques = list(first)
    if not uniques:
        raise ValueError("nothing to encode")
    copies = np.bincount(owner, minlength=len(uniques))
    order = sorted(range(len(uniques)), key=lambda u: len(uniques[u]))
    batches = [order[start:start + batch_size] for start in range(0, len(order), batch_size)]

    def compute(rows: list[int]) -> np.ndarray:
        width = max(1, max(len(uniques[u]) for u in rows))
        ids = np.full((len(rows), width), pad_id, dtype=np.int64)
        mask = np.zeros((len(rows), width), dtype=np.int64)
        for r, u in enumerate(rows):
            seq = uniques[u]
            ids[r, :len(seq)] = seq
            mask[r, :len(seq)] = 1
        return np.asarray(run(ids, mask), dtype=np.float32)

    out: np.ndarray | None = None

    def place(rows: list[int], vectors: np.ndarray) -> None:
        nonlocal out
        if out is None:
            out = np.empty((len(uniques), vectors.shape[1]), dtype=np.float32)
        out[rows] = vectors
        if progress is not None:
            progress.update(int(copies[rows].sum()))

    if workers <= 1 or len(batches) < 2:
        for rows in batches:
            place(rows, compute(rows))
    else:
        from concurrent.futures import ThreadPoolExecutor

        pool = ThreadPoolExecutor(min(workers, len(batches)), thread_name_prefix="kgrag-embed",
                                  initializer=worker_init)
        try:
            for rows, vectors in zip(batches, pool.map(compute, batches)):
                place(rows, vectors)
        finally:
            pool.shutdown(wait=True, cancel_futures=True)
    assert out is not None
    return out[owner]
