"""Stand-in LLMs that replay scripted replies, so the examples run offline and in CI.

Nothing here is needed with a real model: wherever an example builds one of these, pass your own
LangChain chat model (``ChatOpenAI(model=...)``, ``ChatOllama(...)``, ...) or LlamaIndex LLM
(``OpenAI(model=...)``, ``Ollama(...)``, ...) instead. Each stand-in records the prompts it was
given, so an example can show what the model saw.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from langchain_core.language_models import GenericFakeChatModel
from langchain_core.messages import AIMessage
from llama_index.core.llms import CompletionResponse, CustomLLM, LLMMetadata
from llama_index.core.llms.callbacks import llm_completion_callback


class ScriptedLlamaLLM(CustomLLM):
    """A LlamaIndex LLM answering with ``replies`` in order (an error when they run out)."""

    replies: list[str] = []  # noqa: RUF012 (pydantic fields of a CustomLLM)
    prompts: list[str] = []  # noqa: RUF012

    @property
    def metadata(self) -> LLMMetadata:
        return LLMMetadata(model_name="scripted", is_chat_model=False)

    @llm_completion_callback()
    def complete(self, prompt: str, formatted: bool = False, **kwargs: Any) -> CompletionResponse:
        self.prompts.append(prompt)
        if not self.replies:
            raise RuntimeError("the scripted LLM has no reply left for:\n" + prompt[:500])
        return CompletionResponse(text=self.replies.pop(0))

    @llm_completion_callback()
    def stream_complete(self, prompt: str, formatted: bool = False, **kwargs: Any):
        # word by word, as a hosted model streams its reply
        response, so_far = self.complete(prompt, formatted=formatted), ""
        for piece in re.findall(r"\S+\s*|\s+", response.text or "") or [""]:
            so_far += piece
            yield CompletionResponse(text=so_far, delta=piece)


def scripted_llama(*replies: str) -> ScriptedLlamaLLM:
    """A :class:`ScriptedLlamaLLM` with its own reply and prompt lists."""
    return ScriptedLlamaLLM(replies=list(replies), prompts=[])


class ScriptedToolCallingChat(GenericFakeChatModel):
    """A LangChain chat model replaying ``AIMessage`` s (with or without tool calls).

    ``bind_tools`` returns the model itself: the script already says which tools to call.
    """

    def bind_tools(self, tools: Sequence[Any], **kwargs: Any) -> ScriptedToolCallingChat:
        return self


def scripted_chat(*messages: str | AIMessage) -> ScriptedToolCallingChat:
    """A LangChain chat model replying with ``messages`` in order."""
    return ScriptedToolCallingChat(messages=iter(
        [m if isinstance(m, AIMessage) else AIMessage(content=m) for m in messages]))
