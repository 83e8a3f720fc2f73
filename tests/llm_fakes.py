"""The scripted LlamaIndex LLM the tests use: :class:`llama_index_kgrag.testing.ScriptedLLM`
(a real ``CustomLLM``; ``replies`` in order or a ``responder``, ``prompts`` recorded, ``usage``
reported in ``raw``, word-by-word streaming). Kept under its old test name."""

from __future__ import annotations

from llama_index_kgrag.testing import ScriptedLLM as ScriptedLlamaLLM
from llama_index_kgrag.testing import ScriptExhausted

__all__ = ["ScriptExhausted", "ScriptedLlamaLLM"]
