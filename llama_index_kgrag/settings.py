"""LlamaIndex's global ``Settings`` as the default LLM and embedding model.

A LlamaIndex component uses ``Settings.llm`` / ``Settings.embed_model`` when none is passed;
kgrag's factories do the same. Only what the user set is used: reading the public properties
would resolve LlamaIndex's own default (OpenAI) and fail offline, so the private slots they
fill are read instead. With nothing set, ``llm`` stays ``None`` (LLM-free mode or a clear
error) and the embedder stays kgrag's packaged MiniLM.
"""

from __future__ import annotations

from typing import Any

from llama_index.core import Settings


def settings_llm(llm: Any = None) -> Any:
    """``llm``, or the LLM set in ``Settings.llm`` (``None`` when neither)."""
    return llm if llm is not None else getattr(Settings, "_llm", None)


def settings_embed_model(embedder: Any = None) -> Any:
    """``embedder``, or the model set in ``Settings.embed_model`` (``None`` when neither)."""
    return embedder if embedder is not None else getattr(Settings, "_embed_model", None)


def with_settings(llm: Any = None, embedder: Any = None) -> dict[str, Any]:
    """``{"llm": ..., "embedder": ...}`` with the ``Settings`` defaults filled in."""
    return {"llm": settings_llm(llm), "embedder": settings_embed_model(embedder)}
