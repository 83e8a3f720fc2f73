"""Adapters that make LangChain and LlamaIndex embedding models kgrag :class:`Embedder` s.

The core never imports LangChain or LlamaIndex. Detection in :func:`as_embedder` looks at
``sys.modules``: if an object is a LangChain ``Embeddings``, ``langchain_core`` is already
imported, so checking the class there costs nothing and imports nothing. Objects of other
embedding libraries with the same method names are accepted by duck typing.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from typing import Any

import numpy as np

from kgrag.embed.base import Embedder, as_matrix, as_vector
from kgrag.embed.sentence_transformer import PROGRESS_THRESHOLD

_DIM_PROBE = "dimension probe"


class _AdapterBase:
    """Shared batching, progress bar and dimension bookkeeping of the adapters."""

    def __init__(self, *, name: str | None, batch_size: int, show_progress: bool | None) -> None:
        if batch_size < 1:
            raise ValueError("batch_size must be at least 1")
        self._name = name
        self.batch_size = batch_size
        self.show_progress = show_progress
        self._dimension: int | None = None

    @property
    def name(self) -> str:
        return self._name or type(self._wrapped()).__name__

    def _wrapped(self) -> Any:  # pragma: no cover - overridden
        raise NotImplementedError

    def _embed_batch(self, texts: list[str]) -> Any:  # pragma: no cover - overridden
        raise NotImplementedError

    def _embed_one(self, text: str) -> Any:  # pragma: no cover - overridden
        raise NotImplementedError

    def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        texts = [str(t) for t in texts]
        if not texts:
            return np.zeros((0, self.dimension), dtype=np.float32)
        show = self.show_progress if self.show_progress is not None else (
            len(texts) > PROGRESS_THRESHOLD)
        bar = None
        if show:
            from tqdm.auto import tqdm

            bar = tqdm(total=len(texts), desc=f"embedding ({self.name})", unit="text")
        parts = []
        try:
            for start in range(0, len(texts), self.batch_size):
                batch = texts[start:start + self.batch_size]
                parts.append(as_matrix(self._embed_batch(batch), len(batch), source=self.name))
                if bar is not None:
                    bar.update(len(batch))
        finally:
            if bar is not None:
                bar.close()
        out = np.concatenate(parts, axis=0)
        self._remember_dimension(out.shape[1])
        return out

    def embed_query(self, text: str) -> np.ndarray:
        vec = as_vector(self._embed_one(str(text)), source=self.name)
        self._remember_dimension(vec.shape[0])
        return vec

    def _remember_dimension(self, dim: int) -> None:
        if self._dimension is None:
            self._dimension = int(dim)
        elif self._dimension != dim:
            from kgrag.errors import EmbeddingError

            raise EmbeddingError(f"{self.name} changed dimension from {self._dimension} to {dim}")

    @property
    def dimension(self) -> int:
        """Known after the first call; otherwise found by embedding one probe query."""
        if self._dimension is None:
            self.embed_query(_DIM_PROBE)
        assert self._dimension is not None
        return self._dimension


class LangChainEmbedder(_AdapterBase):
    """Any LangChain ``Embeddings`` (``embed_documents`` / ``embed_query``) as an Embedder."""

    def __init__(self, embeddings: Any, *, name: str | None = None, batch_size: int = 256,
                 show_progress: bool | None = None) -> None:
        super().__init__(name=name, batch_size=batch_size, show_progress=show_progress)
        self.embeddings = embeddings

    def _wrapped(self) -> Any:
        return self.embeddings

    def _embed_batch(self, texts: list[str]) -> Any:
        return self.embeddings.embed_documents(texts)

    def _embed_one(self, text: str) -> Any:
        return self.embeddings.embed_query(text)


class LlamaIndexEmbedder(_AdapterBase):
    """Any LlamaIndex ``BaseEmbedding`` (``get_text_embedding_batch`` / ``get_query_embedding``)."""

    def __init__(self, embed_model: Any, *, name: str | None = None, batch_size: int = 256,
                 show_progress: bool | None = None) -> None:
        super().__init__(name=name, batch_size=batch_size, show_progress=show_progress)
        self.embed_model = embed_model

    @property
    def name(self) -> str:
        model_name = getattr(self.embed_model, "model_name", None)
        return self._name or (f"{type(self.embed_model).__name__}:{model_name}" if model_name
                              else type(self.embed_model).__name__)

    def _wrapped(self) -> Any:
        return self.embed_model

    def _embed_batch(self, texts: list[str]) -> Any:
        return self.embed_model.get_text_embedding_batch(texts, show_progress=False)

    def _embed_one(self, text: str) -> Any:
        return self.embed_model.get_query_embedding(text)


def _is_instance_of_loaded(obj: Any, module: str, attr: str) -> bool:
    """``isinstance(obj, module.attr)`` if that module is already imported, else False."""
    mod = sys.modules.get(module)
    cls = getattr(mod, attr, None) if mod is not None else None
    return isinstance(cls, type) and isinstance(obj, cls)


def _is_kgrag_embedder(obj: Any) -> bool:
    return (callable(getattr(obj, "embed_documents", None))
            and callable(getattr(obj, "embed_query", None))
            and hasattr(type(obj), "dimension"))


def as_embedder(obj: Any = None) -> Embedder:
    """One entry point: turn ``obj`` into a kgrag :class:`Embedder`.

    - ``None`` -> the packaged all-MiniLM-L6-v2 (:func:`default_embedder`, loaded once);
    - a kgrag Embedder (has ``embed_documents``, ``embed_query`` and ``dimension``) -> itself;
    - a LangChain ``Embeddings`` -> :class:`LangChainEmbedder`;
    - a LlamaIndex ``BaseEmbedding`` -> :class:`LlamaIndexEmbedder`;
    - anything else -> ``TypeError``.
    """
    if obj is None:
        from kgrag.embed.sentence_transformer import default_embedder

        return default_embedder()
    if isinstance(obj, str):
        raise TypeError("as_embedder() takes an embedding model object, not a string; for a "
                        "sentence-transformers model use SentenceTransformerEmbedder(path)")
    if _is_instance_of_loaded(obj, "langchain_core.embeddings", "Embeddings"):
        return LangChainEmbedder(obj)
    if _is_instance_of_loaded(obj, "llama_index.core.base.embeddings.base", "BaseEmbedding"):
        return LlamaIndexEmbedder(obj)
    if _is_kgrag_embedder(obj):
        return obj
    if callable(getattr(obj, "get_text_embedding_batch", None)) and callable(
            getattr(obj, "get_query_embedding", None)):
        return LlamaIndexEmbedder(obj)
    if callable(getattr(obj, "embed_documents", None)) and callable(
            getattr(obj, "embed_query", None)):
        return LangChainEmbedder(obj)
    raise TypeError(
        f"cannot use {type(obj).__name__} as an embedder: pass None (default MiniLM), a kgrag "
        "Embedder, a LangChain Embeddings or a LlamaIndex BaseEmbedding")
