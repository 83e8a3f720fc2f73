"""LlamaIndex's global ``Settings`` as the default LLM and embedding model.

A LlamaIndex component uses ``Settings.llm`` / ``Settings.embed_model`` when none is passed;
kgrag's factories do the same. Only what the user set is used: reading the public properties
would resolve LlamaIndex's own default (OpenAI) and fail offline, so the private slots they
fill are read instead. With nothing set, ``llm`` stays ``None`` (LLM-free mode or a clear
error) and the embedder stays kgrag's packaged MiniLM.

``None`` means "not given" (so ``Settings`` fills it in, as everywhere in LlamaIndex); to opt
out of ``Settings`` for one retriever or query engine, pass ``False``:

* ``llm=False`` -- no LLM, whatever ``Settings.llm`` holds: the method's LLM-free mode (or the
  error saying it needs an LLM);
* ``embedder=False`` -- kgrag's packaged all-MiniLM-L6-v2, not ``Settings.embed_model``.

When ``Settings`` does fill one in, it is logged (logger ``llama_index_kgrag.settings``, INFO)
so the choice is never silent.
"""

from __future__ import annotations

import logging
from typing import Any

from llama_index.core import Settings

log = logging.getLogger(__name__)


def settings_llm(llm: Any = None) -> Any:
    """``llm``; ``None`` for ``llm=False`` (explicitly none); else, for ``None``, the LLM set
    in ``Settings.llm`` (``None`` when none is set)."""
    if llm is False:
        return None
    if llm is not None:
        return llm
    found = getattr(Settings, "_llm", None)
    if found is not None:
        log.info("using Settings.llm (%s); pass llm=False for no LLM", type(found).__name__)
    return found


def settings_embed_model(embedder: Any = None) -> Any:
    """``embedder``; ``None`` (kgrag's packaged MiniLM) for ``embedder=False``; else, for
    ``None``, the model set in ``Settings.embed_model`` (``None`` when none is set)."""
    if embedder is False:
        return None
    if embedder is not None:
        return embedder
    found = getattr(Settings, "_embed_model", None)
    if found is not None:
        log.info("using Settings.embed_model (%s); pass embedder=False for kgrag's packaged "
                 "MiniLM", type(found).__name__)
    return found


def with_settings(llm: Any = None, embedder: Any = None) -> dict[str, Any]:
    """``{"llm": ..., "embedder": ...}`` with the ``Settings`` defaults filled in (``False``:
    explicitly none / kgrag's default, see the module docstring)."""
    return {"llm": settings_llm(llm), "embedder": settings_embed_model(embedder)}
