"""A scripted LlamaIndex LLM for tests, examples and offline demos.

:class:`ScriptedLLM` is a real LlamaIndex ``CustomLLM`` (so adapters, callbacks, ``Settings``
and query engines treat it like any hosted model) whose replies come from a script: a list of
``replies`` used in order, or a ``responder(prompt) -> str`` function. It records every prompt,
reports ``usage`` token counts in the response's ``raw`` the way hosted models do, and streams
its reply word by word. When the script runs out it raises :class:`ScriptExhausted` (a
:class:`kgrag.errors.LLMCallError`, and an ``IndexError``) naming the prompt it could not
answer -- the typed error every method raises for an exhausted model.

>>> llm = ScriptedLLM(replies=["Paris"])
>>> llm.complete("Capital of France?").text, llm.prompts
('Paris', ['Capital of France?'])
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from typing import Any

from llama_index.core.llms import CompletionResponse, CustomLLM, LLMMetadata
from llama_index.core.llms.callbacks import llm_completion_callback
from pydantic import Field

from kgrag.errors import LLMCallError

__all__ = ["ScriptExhausted", "ScriptedLLM", "scripted_llm"]


class ScriptExhausted(LLMCallError, IndexError):
    """The scripted LLM was asked more often than it has replies (an exhausted model: an
    :class:`~kgrag.errors.LLMCallError`, as LangChain's fakes are turned into by kgrag)."""


class ScriptedLLM(CustomLLM):
    """A LlamaIndex LLM answering from a script (see the module docstring)."""

    #: replies used in order (ignored when ``responder`` is set)
    replies: list[str] = Field(default_factory=list)
    #: every prompt received, in order
    prompts: list[str] = Field(default_factory=list)
    #: ``{"prompt_tokens": ..., "completion_tokens": ...}`` reported with every reply
    usage: dict[str, int] = Field(default_factory=dict)
    #: computes the reply from the prompt instead of ``replies``
    responder: Callable[[str], str] | None = None
    model_name: str = "scripted"

    @property
    def metadata(self) -> LLMMetadata:
        return LLMMetadata(model_name=self.model_name, is_chat_model=False)

    def _reply(self, prompt: str) -> str:
        self.prompts.append(prompt)
        if self.responder is not None:
            return str(self.responder(prompt))
        if not self.replies:
            raise ScriptExhausted("the scripted LLM has no reply left for:\n" + prompt[:500])
        return self.replies.pop(0)

    @llm_completion_callback()
    def complete(self, prompt: str, formatted: bool = False, **kwargs: Any) -> CompletionResponse:
        text = self._reply(prompt)
        return CompletionResponse(text=text,
                                  raw={"usage": dict(self.usage)} if self.usage else None)

    @llm_completion_callback()
    def stream_complete(self, prompt: str, formatted: bool = False,
                        **kwargs: Any) -> Iterator[CompletionResponse]:
        # word by word, as a hosted model streams its reply
        text, so_far = self._reply(prompt), ""
        raw = {"usage": dict(self.usage)} if self.usage else None
        for piece in re.findall(r"\S+\s*|\s+", text) or [""]:
            so_far += piece
            yield CompletionResponse(text=so_far, delta=piece, raw=raw)


def scripted_llm(*replies: str, **options: Any) -> ScriptedLLM:
    """A :class:`ScriptedLLM` replying with ``replies`` in order."""
    return ScriptedLLM(replies=list(replies), **options)
