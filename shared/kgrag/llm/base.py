"""The LLM port: a tiny completion protocol, adapters for LangChain / LlamaIndex, usage accounting.

Methods call ``llm.complete(prompt) -> str`` (or ``await llm.acomplete(prompt)``). Users pass any
LangChain ``BaseChatModel`` / ``BaseLanguageModel`` or LlamaIndex ``LLM``; :func:`as_llm` wraps it.
Every adapter counts calls and, where the model reports them, prompt and completion tokens, into a
:class:`~kgrag.context.types.Usage` so a method can report the cost of each question.

The core never imports LangChain or LlamaIndex at module level: detection is duck-typed on the
class hierarchy's module names, and imports happen inside the adapter that needs them.
"""

from __future__ import annotations

import asyncio
import threading
from contextlib import ExitStack, contextmanager
from typing import Any, Callable, Iterator, Protocol, runtime_checkable

from kgrag.context.types import Usage
from kgrag.errors import LLMNotConfiguredError

NO_LLM_HELP = (
    "{what} needs an LLM and none was configured. Pass llm= with any LangChain chat model "
    "(e.g. ChatOpenAI, ChatBedrock, ChatOllama) or LlamaIndex LLM, or use the method's LLM-free mode."
)


@runtime_checkable
class LLM(Protocol):
    """What kgrag needs from a language model."""

    usage: Usage

    def complete(self, prompt: str, *, system: str | None = None) -> str: ...

    async def acomplete(self, prompt: str, *, system: str | None = None) -> str: ...


class UsageTracker:
    """Thread-safe usage counter shared by an adapter; ``track()`` measures one scope."""

    def __init__(self) -> None:
        self.usage = Usage()
        self._lock = threading.Lock()
        self._scopes: list[Usage] = []

    def record(self, prompt_tokens: int = 0, completion_tokens: int = 0) -> None:
        delta = Usage(1, int(prompt_tokens or 0), int(completion_tokens or 0))
        with self._lock:
            self.usage.add(delta)
            for scope in self._scopes:
                scope.add(delta)

    @contextmanager
    def track(self) -> Iterator[Usage]:
        """Count the calls and tokens spent inside the ``with`` block (across threads)."""
        scope = Usage()
        with self._lock:
            self._scopes.append(scope)
        try:
            yield scope
        finally:
            with self._lock:
                # by identity: Usage is a dataclass, so == would match an equal outer scope
                self._scopes[:] = [s for s in self._scopes if s is not scope]


@contextmanager
def track_usage(*llms: Any) -> Iterator[Usage]:
    """Usage of every distinct adapter in ``llms`` (``None`` skipped) inside the block, summed.

    The yielded :class:`Usage` is filled in when the block exits.
    """
    total = Usage()
    unique = {id(llm): llm for llm in llms if llm is not None}
    with ExitStack() as stack:
        scopes = [stack.enter_context(llm.track()) for llm in unique.values()]
        try:
            yield total
        finally:
            for scope in scopes:
                total.add(scope)


class BaseLLMAdapter(UsageTracker):
    """Shared behaviour: usage accounting and a thread-offloaded async fallback."""

    def __init__(self, model: Any) -> None:
        super().__init__()
        self.model = model

    def complete(self, prompt: str, *, system: str | None = None) -> str:
        raise NotImplementedError

    async def acomplete(self, prompt: str, *, system: str | None = None) -> str:
        return await asyncio.to_thread(self.complete, prompt, system=system)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({type(self.model).__name__})"


def _text_of(content: Any) -> str:
    """LangChain message content may be a string or a list of content blocks."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = []
        for block in content:
            if isinstance(block, str):
                parts.append(block)
            elif isinstance(block, dict) and block.get("type") == "text":
                parts.append(str(block.get("text", "")))
        return "".join(parts)
    return str(content)


class LangChainLLM(BaseLLMAdapter):
    """Wraps a LangChain chat model (``BaseChatModel``) or completion model (``BaseLLM``)."""

    def _messages(self, prompt: str, system: str | None) -> Any:
        from langchain_core.language_models import BaseChatModel
        from langchain_core.messages import HumanMessage, SystemMessage

        if not isinstance(self.model, BaseChatModel):
            return prompt if system is None else f"{system}\n\n{prompt}"
        messages = [SystemMessage(content=system)] if system else []
        messages.append(HumanMessage(content=prompt))
        return messages

    def _record(self, reply: Any) -> str:
        usage = getattr(reply, "usage_metadata", None) or {}
        self.record(usage.get("input_tokens", 0), usage.get("output_tokens", 0))
        return _text_of(getattr(reply, "content", reply))

    def complete(self, prompt: str, *, system: str | None = None) -> str:
        return self._record(self.model.invoke(self._messages(prompt, system)))

    async def acomplete(self, prompt: str, *, system: str | None = None) -> str:
        return self._record(await self.model.ainvoke(self._messages(prompt, system)))


class LlamaIndexLLM(BaseLLMAdapter):
    """Wraps a LlamaIndex ``LLM`` (chat API when the model is a chat model, else completion)."""

    def _use_chat(self) -> bool:
        meta = getattr(self.model, "metadata", None)
        return bool(getattr(meta, "is_chat_model", False))

    def _messages(self, prompt: str, system: str | None) -> list[Any]:
        from llama_index.core.llms import ChatMessage, MessageRole

        messages = [ChatMessage(role=MessageRole.SYSTEM, content=system)] if system else []
        messages.append(ChatMessage(role=MessageRole.USER, content=prompt))
        return messages

    def _record(self, raw: Any, text: str) -> str:
        usage = {}
        if isinstance(raw, dict):
            usage = raw.get("usage") or {}
            if not isinstance(usage, dict):
                usage = {k: getattr(usage, k, 0) for k in ("prompt_tokens", "completion_tokens")}
        self.record(usage.get("prompt_tokens", 0) or usage.get("input_tokens", 0),
                    usage.get("completion_tokens", 0) or usage.get("output_tokens", 0))
        return text

    def complete(self, prompt: str, *, system: str | None = None) -> str:
        if self._use_chat():
            reply = self.model.chat(self._messages(prompt, system))
            return self._record(getattr(reply, "raw", None), reply.message.content or "")
        full = prompt if system is None else f"{system}\n\n{prompt}"
        reply = self.model.complete(full)
        return self._record(getattr(reply, "raw", None), reply.text or "")

    async def acomplete(self, prompt: str, *, system: str | None = None) -> str:
        if self._use_chat():
            reply = await self.model.achat(self._messages(prompt, system))
            return self._record(getattr(reply, "raw", None), reply.message.content or "")
        full = prompt if system is None else f"{system}\n\n{prompt}"
        reply = await self.model.acomplete(full)
        return self._record(getattr(reply, "raw", None), reply.text or "")


class CallableLLM(BaseLLMAdapter):
    """Wraps a plain ``fn(prompt) -> str`` (handy for scripts and scripted tests)."""

    def complete(self, prompt: str, *, system: str | None = None) -> str:
        text = self.model(prompt if system is None else f"{system}\n\n{prompt}")
        self.record()
        return str(text)


def _has_base(obj: Any, module_prefix: str, class_names: tuple[str, ...]) -> bool:
    for cls in type(obj).__mro__:
        if cls.__module__.startswith(module_prefix) and cls.__name__ in class_names:
            return True
    return False


def as_llm(model: Any, *, what: str = "This step") -> BaseLLMAdapter:
    """Wrap ``model`` for kgrag: a LangChain model, a LlamaIndex LLM, an adapter, or a callable.

    ``None`` raises :class:`~kgrag.errors.LLMNotConfiguredError` saying how to pass one.
    """
    if model is None:
        raise LLMNotConfiguredError(NO_LLM_HELP.format(what=what))
    if isinstance(model, BaseLLMAdapter):
        return model
    if _has_base(model, "langchain_core", ("BaseLanguageModel",)):
        return LangChainLLM(model)
    if _has_base(model, "llama_index", ("LLM", "BaseLLM")):
        return LlamaIndexLLM(model)
    if callable(model):
        return CallableLLM(model)
    raise TypeError(
        f"cannot use {type(model).__name__} as an LLM: pass a LangChain chat model, a LlamaIndex "
        "LLM, or a function prompt -> str"
    )


def optional_llm(model: Any) -> BaseLLMAdapter | None:
    """``as_llm`` for methods with an LLM-free mode: ``None`` stays ``None``."""
    return None if model is None else as_llm(model)


LLMFactory = Callable[[], Any]
