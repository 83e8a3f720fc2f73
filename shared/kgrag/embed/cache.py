"""On-disk caching of document embeddings (``.npy`` files keyed by a content hash; no pickle)."""

from __future__ import annotations

import hashlib
import os
import re
import tempfile
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from kgrag.embed.base import Embedder, embedder_name


def texts_fingerprint(texts: Sequence[str], model: str) -> str:
    """SHA-256 over the model name and the texts (length-prefixed, so no two lists collide)."""
    digest = hashlib.sha256()
    digest.update(model.encode("utf-8"))
    for text in texts:
        data = str(text).encode("utf-8", "surrogatepass")  # lone surrogates must not crash
        digest.update(len(data).to_bytes(8, "little"))
        digest.update(data)
    return digest.hexdigest()


class CachedEmbedder:
    """Wraps an embedder; ``embed_documents`` results are stored under ``cache_dir`` as ``.npy``.

    The file name holds the model name and a hash of the exact text list, so a changed name list
    or model never reuses stale vectors. A file of the wrong shape is ignored and rewritten.
    Queries are not cached (they are cheap and rarely repeat). Writes are atomic (temp file +
    rename), so an interrupted run leaves no half-written cache.
    """

    def __init__(self, embedder: Embedder, cache_dir: str | os.PathLike[str], *,
                 min_texts: int = 1) -> None:
        self.embedder = embedder
        self.cache_dir = Path(cache_dir)
        self.min_texts = min_texts

    @property
    def name(self) -> str:
        return embedder_name(self.embedder)

    @property
    def dimension(self) -> int:
        return self.embedder.dimension

    def cache_path(self, texts: Sequence[str]) -> Path:
        slug = re.sub(r"[^A-Za-z0-9_.-]+", "_", self.name)[:60]
        return self.cache_dir / f"{slug}-{texts_fingerprint(texts, self.name)[:32]}.npy"

    def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        texts = [str(t) for t in texts]
        if len(texts) < self.min_texts:
            return self.embedder.embed_documents(texts)
        path = self.cache_path(texts)
        if path.is_file():
            try:
                cached = np.load(path, allow_pickle=False)
                if (cached.ndim == 2 and cached.shape[0] == len(texts)
                        and cached.dtype == np.float32):
                    return cached
            except (OSError, ValueError):
                pass  # unreadable cache: recompute and overwrite
        vectors = np.ascontiguousarray(self.embedder.embed_documents(texts), dtype=np.float32)
        self.cache_dir.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=self.cache_dir, suffix=".npy.tmp")
        try:
            with os.fdopen(fd, "wb") as fh:
                np.save(fh, vectors, allow_pickle=False)
            os.replace(tmp, path)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise
        return vectors

    def embed_query(self, text: str) -> np.ndarray:
        return self.embedder.embed_query(text)
