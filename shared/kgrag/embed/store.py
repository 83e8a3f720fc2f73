"""The one on-disk embedding cache every kgrag entry point shares (CLI and Python API).

Every embedding that is kept on disk goes through :func:`embed_cached` and a
:class:`VectorStore`: the graph's name vectors (:mod:`kgrag.embed.graph_vectors`, which adds the
in-process memo per graph), the process's default store below, and an explicit folder given as
``CachedEmbedder(embedder, folder)`` (ByoKG-RAG's ``cache_dir``, the evaluation's
``--cache-dir``), which uses the same format there.

Where: ``$KGRAG_CACHE_DIR`` if set, else the user cache directory (``platformdirs`` when
installed, else ``$XDG_CACHE_HOME/kgrag`` or ``~/.cache/kgrag``). :func:`configure_cache` changes
it for the process (the CLI's ``--cache-dir`` / ``--no-cache``); ``KGRAG_NO_CACHE=1`` turns the
vector cache off. Everything in it is derived data: deleting the folder is always safe.

What: ``vectors/<key>.npy`` with ``vectors/<key>.json`` beside it. The key is a SHA-256 over the
embedder's :func:`embedder_cache_key` (model name + content hash of its files) and the exact
texts, so a changed graph or a changed model never reuses stale vectors. Files are written to a
temporary name and renamed (the manifest last), so an interrupted run leaves either a complete
entry or none; an entry that does not match its manifest is ignored and rewritten. Nothing is
pickled. Also under the root: ``models/`` (ONNX exports, :mod:`kgrag.embed.onnx_backend`) and
``indexes/`` (FAISS graphs, :mod:`kgrag.embed.graph_index`).

Embedders without a stable identity (a lookup table, a framework object without a ``name``) are
never cached on disk; in-process sharing (:mod:`kgrag.embed.graph_vectors`) still applies.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from kgrag.embed.base import embedder_name

#: Lists shorter than this are not written to disk (embedding them is quicker than a file).
DEFAULT_MIN_TEXTS = 256

def texts_fingerprint(texts: Sequence[str], model: str) -> str:
    """SHA-256 over the model name and the texts (length-prefixed, so no two lists collide)."""
    digest = hashlib.sha256()
    digest.update(model.encode("utf-8"))
    for text in texts:
        data = str(text).encode("utf-8", "surrogatepass")  # lone surrogates must not crash
        digest.update(len(data).to_bytes(8, "little"))
        digest.update(data)
    return digest.hexdigest()


_state_lock = threading.Lock()
_configured_root: Path | None = None
_configured_enabled: bool | None = None


def default_cache_root() -> Path:
    """``$KGRAG_CACHE_DIR``, else the platform's user cache directory for kgrag."""
    env = os.environ.get("KGRAG_CACHE_DIR")
    if env:
        return Path(env).expanduser()
    try:
        import platformdirs

        return Path(platformdirs.user_cache_dir("kgrag", appauthor=False))
    except ImportError:
        base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
        return Path(base) / "kgrag"


def cache_root() -> Path:
    """The cache root in effect (:func:`configure_cache` wins over the environment)."""
    return _configured_root if _configured_root is not None else default_cache_root()


def cache_enabled() -> bool:
    """Whether name vectors are read from / written to disk in this process."""
    if _configured_enabled is not None:
        return _configured_enabled
    return os.environ.get("KGRAG_NO_CACHE", "").strip().lower() not in ("1", "true", "yes")


def configure_cache(cache_dir: str | os.PathLike[str] | None = None, *,
                    enabled: bool | None = None) -> None:
    """Set the process's cache root (``None`` = back to the default) and switch the on-disk
    vector cache on or off (``None`` = back to ``KGRAG_NO_CACHE``)."""
    global _configured_root, _configured_enabled
    with _state_lock:
        _configured_root = Path(cache_dir).expanduser() if cache_dir is not None else None
        _configured_enabled = enabled


def embedder_cache_key(embedder: Any) -> str | None:
    """A string that identifies ``embedder``'s vectors across processes, or ``None``.

    Wrappers (``CachedEmbedder``, the eval embedder) are unwrapped; an embedder may define its
    own ``cache_key`` (``SentenceTransformerEmbedder`` hashes its model files). Framework
    adapters are keyed by the ``name`` given to them explicitly, nothing else.
    """
    seen = 0
    while seen < 8:
        key = getattr(type(embedder), "cache_key", None)
        if key is not None:
            value = getattr(embedder, "cache_key", None)
            return str(value) if value else None
        inner = getattr(embedder, "embedder", None)
        if inner is None or inner is embedder:
            break
        embedder, seen = inner, seen + 1
    explicit = getattr(embedder, "_name", None)
    wrapped = getattr(embedder, "embeddings", None) or getattr(embedder, "embed_model", None)
    if explicit and wrapped is not None:
        return f"{type(embedder).__name__}:{explicit}"
    return None


class VectorStore:
    """Vectors of text lists on disk under ``root/vectors`` (see the module docstring)."""

    def __init__(self, root: str | os.PathLike[str], *, min_texts: int = DEFAULT_MIN_TEXTS
                 ) -> None:
        self.root = Path(root)
        self.min_texts = min_texts

    @property
    def folder(self) -> Path:
        return self.root / "vectors"

    @staticmethod
    def key(model_key: str, texts: Sequence[str]) -> str:
        return texts_fingerprint(texts, model_key)[:40]

    def paths(self, key: str) -> tuple[Path, Path]:
        return self.folder / f"{key}.npy", self.folder / f"{key}.json"

    def load(self, key: str, count: int) -> np.ndarray | None:
        """The stored matrix for ``key`` if complete and consistent (``count`` rows), else None."""
        data, meta = self.paths(key)
        try:
            manifest = json.loads(meta.read_text(encoding="utf-8"))
            # mapped read-only: processes that read the same entry (server workers) share
            # one copy in the page cache; np.load checks the header against the file size
            vectors = np.load(data, allow_pickle=False, mmap_mode="r")
        except (OSError, ValueError):
            return None
        if (not isinstance(manifest, dict) or manifest.get("rows") != count
                or vectors.ndim != 2 or vectors.shape != (count, manifest.get("dimension"))
                or vectors.dtype != np.float32):
            return None
        return vectors

    def save(self, key: str, vectors: np.ndarray, **info: Any) -> None:
        """Write ``vectors`` atomically: data first, then the manifest that makes it valid."""
        data, meta = self.paths(key)
        self.folder.mkdir(parents=True, exist_ok=True)
        vectors = np.ascontiguousarray(vectors, dtype=np.float32)
        manifest = {"format": "kgrag-vectors", "version": 1, "rows": int(vectors.shape[0]),
                    "dimension": int(vectors.shape[1]), **info}
        _atomic_write(data, lambda fh: np.save(fh, vectors, allow_pickle=False))
        _atomic_write(meta, lambda fh: fh.write(json.dumps(manifest, ensure_ascii=False,
                                                           indent=1).encode("utf-8")))


def _atomic_write(path: Path, write: Any) -> None:
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=path.name + ".", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as fh:
            write(fh)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def _has_own_cache(embedder: Any) -> bool:
    for _ in range(8):
        if isinstance(embedder, CachedEmbedder):
            return True
        inner = getattr(embedder, "cached", None) or getattr(embedder, "embedder", None)
        if inner is None or inner is embedder:
            return False
        embedder = inner
    return False


def default_store() -> VectorStore | None:
    """The process's vector store, or ``None`` when the cache is switched off."""
    return VectorStore(cache_root()) if cache_enabled() else None


def embed_cached(embedder: Any, texts: Sequence[str], *,
                 store: VectorStore | None | str = "default",
                 kind: str = "texts", model_key: str | None = None) -> np.ndarray:
    """``embedder.embed_documents(texts)`` through the on-disk cache when the embedder has a
    stable identity (``model_key``, default :func:`embedder_cache_key`) and the list is long
    enough; ``store=None`` skips the disk. The result may be a read-only memory map."""
    texts = [str(t) for t in texts]
    if _has_own_cache(embedder):  # an explicit CachedEmbedder directory wins
        return np.asarray(embedder.embed_documents(texts), dtype=np.float32)
    active = default_store() if isinstance(store, str) else store
    if active is not None and len(texts) < active.min_texts:
        active = None  # short lists: embedding them is quicker than a file
    if active is not None and model_key is None:
        model_key = embedder_cache_key(embedder)
    if active is None or model_key is None:
        return np.asarray(embedder.embed_documents(texts), dtype=np.float32)
    key = active.key(model_key, texts)
    cached = active.load(key, len(texts))
    if cached is not None:
        return cached
    vectors = np.asarray(embedder.embed_documents(texts), dtype=np.float32)
    try:
        active.save(key, vectors, model=model_key, kind=kind)
    except OSError as exc:  # a read-only or full disk costs speed, never the answer
        import logging

        logging.getLogger("kgrag.embed").warning("could not write the embedding cache %s: %s",
                                                 active.folder, exc)
    return vectors


class CachedEmbedder:
    """Wraps an embedder; its document embeddings are kept in a :class:`VectorStore` under
    ``cache_dir`` (``cache_dir/vectors/<key>.npy`` + manifest, the format of the process's
    default cache).

    Unlike the default cache, an explicit folder also caches embedders without a stable
    :func:`embedder_cache_key`, keyed by their :func:`~kgrag.embed.base.embedder_name`: naming
    the folder is the caller's promise that the name identifies the vectors. Lists shorter
    than ``min_texts`` are not written. Queries are not cached (they are cheap and rarely
    repeat). The vectors returned are the caller's to modify (a copy of the file's).
    """

    def __init__(self, embedder: Any, cache_dir: str | os.PathLike[str], *,
                 min_texts: int = 1) -> None:
        self.embedder = embedder
        self.store = VectorStore(cache_dir, min_texts=min_texts)

    @property
    def cache_dir(self) -> Path:
        return self.store.root

    @property
    def min_texts(self) -> int:
        return self.store.min_texts

    @property
    def name(self) -> str:
        return embedder_name(self.embedder)

    @property
    def dimension(self) -> int:
        return int(self.embedder.dimension)

    def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        key = embedder_cache_key(self.embedder) or f"name:{self.name}"
        vectors = embed_cached(self.embedder, texts, store=self.store, model_key=key)
        return vectors if vectors.flags.writeable else np.array(vectors)

    def embed_query(self, text: str) -> np.ndarray:
        return self.embedder.embed_query(text)
