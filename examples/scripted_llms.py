"""Stand-in LLMs that replay scripted replies, so the examples run offline and in CI.

Nothing here is needed with a real model: wherever an example builds one of these, pass your own
LangChain chat model (``ChatOpenAI(model=...)``, ``ChatOllama(...)``, ...) or LlamaIndex LLM
(``OpenAI(model=...)``, ``Ollama(...)``, ...) instead. The stand-ins are the packages' own
scripted models (:mod:`llama_index_kgrag.testing`, :mod:`langchain_kgrag.testing`), the same the
test suite uses; each records the prompts it was given, so an example can show what the model
saw.
"""

from __future__ import annotations

from langchain_kgrag.testing import ScriptedChatModel, scripted_chat
from llama_index_kgrag.testing import ScriptedLLM, scripted_llm

#: the names the examples use
ScriptedLlamaLLM = ScriptedLLM
ScriptedToolCallingChat = ScriptedChatModel
scripted_llama = scripted_llm

__all__ = ["ScriptedLlamaLLM", "ScriptedToolCallingChat", "scripted_chat", "scripted_llama"]
