"""A LlamaIndex ``CustomLLM`` that replays scripted replies (a real LlamaIndex LLM class).

``prompts`` records every prompt it received; ``usage`` (when given) is reported in the
response's ``raw`` the way hosted models report token counts.
"""

from __future__ import annotations

from typing import Any

from llama_index.core.llms import CompletionResponse, CustomLLM, LLMMetadata
from llama_index.core.llms.callbacks import llm_completion_callback


class ScriptedLlamaLLM(CustomLLM):
    replies: list[str] = []
    prompts: list[str] = []
    usage: dict[str, int] = {}

    @property
    def metadata(self) -> LLMMetadata:
        return LLMMetadata(model_name="scripted")

    @llm_completion_callback()
    def complete(self, prompt: str, formatted: bool = False, **kwargs: Any) -> CompletionResponse:
        self.prompts.append(prompt)
        raw = {"usage": dict(self.usage)} if self.usage else None
        return CompletionResponse(text=self.replies.pop(0), raw=raw)

    @llm_completion_callback()
    def stream_complete(self, prompt: str, formatted: bool = False, **kwargs: Any):
        yield self.complete(prompt)
